package streamsql.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static streamsql.engine.Harness.r;

import java.util.List;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.FunctionHint;
import org.apache.flink.table.functions.AggregateFunction;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import streamsql.engine.spec.Aggregate;
import streamsql.engine.spec.AggregateCall;
import streamsql.engine.spec.FunctionDescription;
import streamsql.engine.udf.FlinkAggregate;

/**
 * A user's Flink aggregate function in the engine's group aggregation (against the
 * stand-ins of Flink's API in this test tree): accumulate and retract per change, getValue
 * before and after each batch, the accumulator kept as bytes in the state store and read
 * back by another instance, as after a restart.
 */
class UserAggregateTest {
  /** Flink's documented weighted average, its accumulator a POJO that is not Serializable. */
  public static class WeightedAvg extends AggregateFunction<Long, WeightedAvg.Acc> {
    public static class Acc {
      public long sum;
      public int count;
    }

    @Override
    public Acc createAccumulator() {
      return new Acc();
    }

    @Override
    public Long getValue(Acc acc) {
      return acc.count == 0 ? null : acc.sum / acc.count;
    }

    public void accumulate(Acc acc, Long value, int weight) {
      if (value != null) {
        acc.sum += value * weight;
        acc.count += weight;
      }
    }

    public void retract(Acc acc, Long value, int weight) {
      if (value != null) {
        acc.sum -= value * weight;
        acc.count -= weight;
      }
    }
  }

  /** An accumulator without a no-argument constructor, typed by a hint; no retract. */
  @FunctionHint(accumulator = @DataTypeHint("ROW<s STRING>"))
  public static class Joined extends AggregateFunction<String, Joined.Acc> {
    public static final class Acc {
      final StringBuilder text;

      Acc(String start) {
        text = new StringBuilder(start);
      }
    }

    @Override
    public Acc createAccumulator() {
      return new Acc("");
    }

    @Override
    @DataTypeHint("VARCHAR(10)")
    public String getValue(Acc acc) {
      return acc.text.toString();
    }

    public void accumulate(Acc acc, String s) {
      acc.text.append(s);
    }
  }

  /** The largest value seen; its retract forgets nothing. */
  public static class Largest extends AggregateFunction<Long, long[]> {
    @Override
    public long[] createAccumulator() {
      return new long[] {Long.MIN_VALUE};
    }

    @Override
    public Long getValue(long[] acc) {
      return acc[0];
    }

    public void accumulate(long[] acc, Long x) {
      acc[0] = Math.max(acc[0], x);
    }

    public void retract(long[] acc, Long x) {}
  }

  static final StructType INPUT = Harness.schema("g INT, a STRUCT<a0: BIGINT, a1: INT>, __sign INT");
  static final String ACCUMULATE = "public void " + WeightedAvg.class.getName()
      + ".accumulate(" + WeightedAvg.Acc.class.getName() + ",java.lang.Long,int)";
  static final String RETRACT = ACCUMULATE.replace(".accumulate(", ".retract(");

  static Harness grouped(boolean distinct) {
    List<AggregateCall> calls = List.of(
        new AggregateCall("count_star", "n", "\"long\"", null, false, null, 1, null, null, null, null),
        new AggregateCall("user", "w", "\"long\"", "a", distinct, null, 1, null, WeightedAvg.class.getName(),
            ACCUMULATE, RETRACT));
    return Harness.of(Engine.aggregateOp(new Aggregate(List.of("g"), calls, false, false, 0), INPUT));
  }

  @Test
  void insertsAccumulateAndRetractionsRetractWithTheGroupsOldResultRetracted() {
    Harness op = grouped(false);
    assertEquals(List.of(r(1, 1, 2L, 20L, "+U")), op.batch(r(1), r(1, r(10L, 1), 1), r(1, r(30L, 1), 1)));
    // 10 retracted, 40 (weight 3) accumulated: (30 + 120) / 4.
    assertEquals(List.of(r(-1, 1, 2L, 20L, null), r(1, 1, 2L, 37L, "+U")),
        op.batch(r(1), r(1, r(10L, 1), -1), r(1, r(40L, 3), 1)));
    // A row its FILTER leaves out (a NULL struct) is counted, not accumulated.
    assertEquals(List.of(r(-1, 1, 2L, 37L, null), r(1, 1, 3L, 37L, "+U")), op.batch(r(1), r(1, null, 1)));
  }

  @Test
  void aGroupWhoseLastRowIsRetractedStartsFromANewAccumulator() {
    String accumulate = "public void " + Largest.class.getName() + ".accumulate(long[],java.lang.Long)";
    List<AggregateCall> calls = List.of(new AggregateCall("user", "m", "\"long\"", "a", false, null, 1, null,
        Largest.class.getName(), accumulate, accumulate.replace(".accumulate(", ".retract(")));
    Harness op = Harness.of(Engine.aggregateOp(new Aggregate(List.of("g"), calls, false, false, 0),
        Harness.schema("g INT, a STRUCT<a0: BIGINT>, __sign INT")));
    op.batch(r(1), r(1, r(5L), 1));
    // 5 goes (the group is empty: Flink clears its accumulator) and 3 comes: 3, not 5.
    assertEquals(List.of(r(-1, 1, 5L, null), r(1, 1, 3L, "+U")), op.batch(r(1), r(1, r(3L), 1), r(1, r(5L), -1)));
  }

  @Test
  void theAccumulatorIsReadBackFromItsBytesByAnotherInstance() {
    Harness first = grouped(false);
    first.batch(r(1), r(1, r(10L, 1), 1), r(1, r(20L, 2), 1));
    byte[] state = first.value("acc", r(1));
    Harness restarted = grouped(false);
    restarted.setValue("acc", r(1), state);
    assertEquals(List.of(r(-1, 1, 2L, 16L, null), r(1, 1, 3L, 25L, "+U")),
        restarted.batch(r(1), r(1, r(50L, 1), 1)));
  }

  @Test
  void distinctPassesEachArgumentTupleOnce() {
    Harness op = grouped(true);
    assertEquals(List.of(r(1, 1, 3L, 15L, "+U")),
        op.batch(r(1), r(1, r(10L, 1), 1), r(1, r(10L, 1), 1), r(1, r(20L, 1), 1)));
    // One of the two (10, 1) rows goes: the distinct value stays.
    assertEquals(List.of(r(-1, 1, 3L, 15L, null), r(1, 1, 2L, 15L, "+U")), op.batch(r(1), r(1, r(10L, 1), -1)));
  }

  @Test
  void anAccumulatorWithoutADefaultConstructorRoundTrips() {
    String accumulate = "public void " + Joined.class.getName() + ".accumulate(" + Joined.Acc.class.getName()
        + ",java.lang.String)";
    StructType args = Harness.schema("a0 STRING");
    FlinkAggregate fn = new FlinkAggregate(Joined.class.getName(), accumulate, null, args, DataTypes.StringType);
    Object acc = fn.createAccumulator();
    fn.add(acc, r("ab"), 2);
    byte[] bytes = fn.write(acc);
    FlinkAggregate other = new FlinkAggregate(Joined.class.getName(), accumulate, null, args, DataTypes.StringType);
    Object back = other.read(bytes);
    assertEquals("abab", other.value(back));
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> other.add(back, r("x"), -1));
    assertTrue(e.getMessage().contains("has no retract method"), e.getMessage());
  }

  @Test
  void anAggregateFunctionIsDescribedForThePlanner() throws Exception {
    FunctionDescription d = streamsql.engine.udf.FlinkFunctionsAccess.describe(WeightedAvg.class.getName());
    assertEquals("aggregate", d.kind());
    assertEquals(List.of(ACCUMULATE), d.evals().stream().map(e -> e.method()).toList());
    assertEquals("java.lang.Long", d.output().className());
    assertEquals(WeightedAvg.Acc.class.getName(), d.aggregate().accumulator().className());
    assertEquals(List.of("long", "int"),
        d.aggregate().accumulatorFields().stream().map(f -> f.className()).toList());
    assertEquals(List.of(RETRACT), d.aggregate().retracts());
    assertNull(d.hintedOutput());

    FunctionDescription j = streamsql.engine.udf.FlinkFunctionsAccess.describe(Joined.class.getName());
    assertEquals("ROW<s STRING>", j.aggregate().accumulator().hint());
    assertEquals("VARCHAR(10)", j.aggregate().value().hint());
    assertEquals(List.of(), j.aggregate().retracts());
    assertEquals(false, j.functionHint());
  }
}
