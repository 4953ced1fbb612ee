package streamsql.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static streamsql.engine.Harness.r;
import static streamsql.engine.Harness.sorted;

import java.sql.Timestamp;
import java.util.List;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import streamsql.engine.spec.AggregateCall;
import streamsql.engine.spec.CurrentWatermark;
import streamsql.engine.spec.Over;
import streamsql.engine.spec.SessionRows;
import streamsql.engine.spec.SortKey;
import streamsql.engine.spec.TemporalJoin;
import streamsql.engine.spec.TemporalSort;
import streamsql.engine.spec.WindowJoin;
import streamsql.engine.spec.WindowRank;

/**
 * The event-time operators: rows wait in state until the watermark passes their time,
 * then what Flink emits at that watermark comes out once (append-only) and the state
 * they held is dropped. And CURRENT_WATERMARK, which keeps the largest time seen.
 */
class EventTimeOpsTest {

  @Test
  void currentWatermarkGivesEachRowTheWatermarkOfTheRowsBeforeIt() {
    StructType input = Harness.schema("one INT, ts TIMESTAMP");
    Harness op = Harness.of(Engine.watermarkOp(new CurrentWatermark(List.of("one"), "ts", 1000, "wm", false), input));
    Timestamp t5 = new Timestamp(5000), t3 = new Timestamp(3000), t9 = new Timestamp(9000);
    assertEquals(List.of(r(0, t5, null), r(0, t3, new Timestamp(4000))), op.batch(r(0), r(0, t5), r(0, t3)));
    assertEquals(5000L, (Long) op.value("largest", r(0)));
    // The next batch goes on from the largest time of the ones before.
    assertEquals(List.of(r(0, t9, new Timestamp(4000)), r(0, t5, new Timestamp(8000))),
        op.batch(r(0), r(0, t9), r(0, t5)));
    assertEquals(9000L, (Long) op.value("largest", r(0)));
  }

  @Test
  void aSessionIsEmittedWithItsBoundsOnceTheWatermarkPassesItsEnd() {
    StructType input = Harness.schema("k INT, v STRING, __t BIGINT");
    Harness op = Harness.timed(Engine.sessionOp(new SessionRows(List.of("k"), List.of("v"), "__t", 10), input));
    assertEquals(List.of(), op.batch(r(1), r(1, "a", 100L), r(1, "b", 105L), r(1, "c", 200L)));
    assertEquals(3, op.map("rows", r(1)).size());
    assertEquals(List.of(), op.watermark(113));       // [100, 115) ends at 114: not passed
    assertEquals(List.of(r("a", 100L, 115L), r("b", 100L, 115L)), op.watermark(114));
    assertEquals(1, op.map("rows", r(1)).size(), "the open session's row stays");
    assertEquals(List.of(r("c", 200L, 210L)), op.watermark(300));
    assertEquals(0, op.map("rows", r(1)).size());
  }

  @Test
  void aWindowIsRankedOnceItsEndPassesAndForgotten() {
    StructType input = Harness.schema("w BIGINT, name STRING, score INT, __t BIGINT");
    WindowRank spec = new WindowRank(List.of("w"), List.of("name", "score"),
        List.of(new SortKey("score", true, false)), "__t", 1, 2, true);
    Harness op = Harness.timed(Engine.windowRankOp(spec, input));
    assertEquals(List.of(), op.batch(r(0L), r(0L, "a", 1, 999L), r(0L, "b", 3, 999L), r(0L, "c", 2, 999L)));
    assertEquals(List.of(r("b", 3, 1L), r("c", 2, 2L)), op.watermark(999));
    assertEquals(0, op.map("rows", r(0L)).size());
    assertNull(op.value("arrivals", r(0L)));
  }

  @Test
  void aSortedStreamComesOutInTimeThenKeyThenArrivalOrderAndDropsLateRows() {
    StructType input = Harness.schema("one INT, name STRING, score INT, __t BIGINT");
    TemporalSort spec = new TemporalSort(List.of("name", "score"), "__t", List.of(new SortKey("score", true, false)));
    Harness op = Harness.timed(Engine.temporalSortOp(spec, input));
    assertEquals(List.of(), op.batch(r(0), r(0, "a", 1, 200L), r(0, "b", 1, 100L), r(0, "c", 5, 200L),
        r(0, "d", null, 200L), r(0, "e", 1, 200L), r(0, "f", 7, 300L)));
    // Time first; at 200 the score descending (NULL last), equal scores in arrival order.
    assertEquals(List.of(r("b", 1), r("c", 5), r("a", 1), r("e", 1), r("d", null)), op.watermark(250));
    assertEquals(1, op.map("pending", r(0)).size(), "the row the watermark has not passed waits");
    // 200 was emitted: a row at it is late; one after it is not.
    assertEquals(List.of(), op.batch(r(0), r(0, "late", 9, 200L), r(0, "g", 2, 260L)));
    assertEquals(List.of(r("g", 2), r("f", 7)), op.watermark(400));
    assertEquals(0, op.map("pending", r(0)).size());
  }

  @Test
  void aWindowJoinPairsAWindowsRowsAndPadsTheUnmatchedOuterOnes() {
    StructType input = Harness.schema("k INT, __side INT, __t BIGINT, l STRING, r STRING");
    Harness op = Harness.timed(Engine.windowJoinOp(
        new WindowJoin(List.of("k"), List.of("l"), List.of("r"), "__t", true, false), input));
    op.batch(r(1), r(1, 0, 999L, "l1", null), r(1, 1, 999L, null, "r1"), r(1, 1, 999L, null, "r2"));
    op.batch(r(2), r(2, 0, 999L, "l2", null));
    assertEquals(sorted(r("l1", "r1"), r("l1", "r2"), r("l2", null)), sorted(op.watermark(1000)));
    assertEquals(0, op.map("left", r(1)).size());
    assertEquals(0, op.map("right", r(1)).size());
  }

  @Test
  void aTemporalJoinUsesTheVersionValidAtTheLeftRowsTime() {
    StructType input = Harness.schema("k STRING, __side INT, __t BIGINT, __retract BOOLEAN, amount INT, rate INT");
    Harness op = Harness.timed(Engine.temporalJoinOp(new TemporalJoin(List.of("k"), List.of("amount"),
        List.of("rate"), "__t", "__retract", true), input));
    op.batch(r("eur"), r("eur", 1, 10L, false, null, 2), r("eur", 1, 20L, false, null, 3),
        r("eur", 0, 15L, null, 100, null), r("eur", 0, 25L, null, 200, null), r("eur", 0, 5L, null, 300, null));
    // Rows before the first version: padded (LEFT); the others get the version at their time.
    assertEquals(sorted(r(300, null), r(100, 2)), sorted(op.watermark(16)));
    assertEquals(1, op.map("left", r("eur")).size(), "the row at 25 still waits");
    assertEquals(List.of(r(200, 3)), op.watermark(30));
    assertEquals(1, op.map("versions", r("eur")).size(), "only the latest version older than the watermark stays");
  }

  static final StructType OVER_INPUT = Harness.schema("k INT, v BIGINT, __t BIGINT");

  @Test
  void anOverAggregateEmitsEachRowWithItsFrameInTimeOrder() {
    AggregateCall sum = new AggregateCall("sum", "total", "\"long\"", "v", false, null, 1, null, null, null, null);
    Harness op = Harness.timed(Engine.overOp(new Over(List.of("k"), List.of("v"), true, 1, List.of(sum), "__t"),
        OVER_INPUT));
    assertEquals(List.of(), op.batch(r(1), r(1, 5L, 20L), r(1, 1L, 10L), r(1, 7L, 30L)));
    // ROWS BETWEEN 1 PRECEDING AND CURRENT ROW, in time order, whatever the arrival order.
    assertEquals(List.of(r(1L, 1L), r(5L, 6L)), op.watermark(20));
    assertEquals(List.of(r(7L, 12L)), op.watermark(30));
    // A row not after the partition's last emitted time is late: dropped.
    op.batch(r(1), r(1, 9L, 25L));
    assertEquals(List.of(), op.watermark(40));
  }

  @Test
  void lagGivesTheValueOfTheRowBeforeInTimeOrder() {
    AggregateCall lag = new AggregateCall("lag", "before", "\"long\"", "v", false, null, 1, null, null, null, null);
    Harness op = Harness.timed(Engine.overOp(new Over(List.of("k"), List.of("v"), true, -1, List.of(lag), "__t"),
        OVER_INPUT));
    op.batch(r(1), r(1, 5L, 20L), r(1, 1L, 10L));
    assertEquals(List.of(r(1L, null), r(5L, 1L)), op.watermark(20));
    op.batch(r(1), r(1, 7L, 30L));
    assertEquals(List.of(r(7L, 5L)), op.watermark(30));
  }
}
