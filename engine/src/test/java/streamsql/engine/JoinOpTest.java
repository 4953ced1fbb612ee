package streamsql.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static streamsql.engine.Harness.r;
import static streamsql.engine.Harness.sorted;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import streamsql.engine.spec.Join;
import streamsql.engine.spec.JoinSide;

/** Regular joins of changelogs: a row joins what the other side holds under its key. */
class JoinOpTest {
  // Both sides in one stream, as the planner unions them (job/plan/joins.py: join_input).
  static final StructType INPUT = Harness.schema(
      "k INT, __side INT, __sign INT, kind STRING, seq_major STRING, seq_minor BIGINT, l STRING, r STRING");

  static Harness join(boolean leftOuter, boolean rightUpsert) {
    Join spec = new Join(List.of("k"), List.of(new JoinSide(List.of("l"), false, false, false, false),
        new JoinSide(List.of("r"), leftOuter, rightUpsert, false, false)), 0);
    return Harness.of(new JoinOp(spec, INPUT));
  }

  static Row left(int k, String l, int sign) {
    return r(k, 0, sign, null, null, null, l, null);
  }

  static Row right(int k, String v, int sign) {
    return r(k, 1, sign, null, null, null, null, v);
  }

  @Test
  void anInnerJoinEmitsMatchesAndRetractsThem() {
    Harness op = join(false, false);
    assertEquals(List.of(), op.batch(r(1), left(1, "a", 1)));
    assertEquals(List.of(r(1, "a", "x", "+U")), op.batch(r(1), right(1, "x", 1)));
    Map<Row, Long> rights = op.map("side1", r(1));
    assertEquals(Map.of(r("x"), 1L), rights);
    assertEquals(List.of(r(-1, "a", "x", "-D")), op.batch(r(1), left(1, "a", -1)));
    assertEquals(Map.of(), op.map("side0", r(1)));
  }

  @Test
  void aLeftJoinRetractsItsPaddedRowWhenTheFirstMatchArrives() {
    Harness op = join(true, false);
    assertEquals(List.of(r(1, "a", null, "+U")), op.batch(r(2), left(2, "a", 1)));
    assertEquals(sorted(r(-1, "a", null, null), r(1, "a", "x", "+U")), sorted(op.batch(r(2), right(2, "x", 1))));
    assertEquals(sorted(r(-1, "a", "x", null), r(1, "a", null, "+U")), sorted(op.batch(r(2), right(2, "x", -1))));
  }

  @Test
  void anUpsertSideIsNormalizedByTheJoin() {
    Harness op = join(false, true);
    op.batch(r(3), left(3, "a", 1));
    assertEquals(List.of(r(1, "a", "x", "+U")),
        op.batch(r(3), r(3, 1, 0, "U", "f", 1L, null, "x")));
    // The key's new row replaces the old one: the old match is retracted.
    assertEquals(sorted(r(-1, "a", "x", null), r(1, "a", "y", "+U")),
        sorted(op.batch(r(3), r(3, 1, 0, "U", "f", 2L, null, "y"))));
    assertEquals(r("y"), op.value("side1", r(3)));
    assertEquals(List.of(r(-1, "a", "y", "-D")), op.batch(r(3), r(3, 1, 0, "D", "f", 3L, null, null)));
  }
}
