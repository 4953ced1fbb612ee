package streamsql.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static streamsql.engine.Harness.r;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.util.List;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import streamsql.engine.spec.Aggregate;
import streamsql.engine.spec.AggregateCall;

/** GROUP BY with retractions: each batch retracts a group's old result and emits its new one. */
class AggregateOpTest {
  static final StructType INPUT = Harness.schema("g INT, a BIGINT, __sign INT");
  static final List<AggregateCall> CALLS = List.of(
      new AggregateCall("count_star", "n", "\"long\"", null, false, null, 1, null, null, null, null),
      new AggregateCall("sum", "total", "\"long\"", "a", false, null, 1, null, null, null, null),
      new AggregateCall("max", "top", "\"long\"", "a", false, null, 1, null, null, null, null));

  static Harness grouped() {
    return Harness.of(Engine.aggregateOp(new Aggregate(List.of("g"), CALLS, false, false, 0), INPUT));
  }

  /** The group's row count, as the accumulators' state holds it first. */
  static Long count(Harness op, int group) throws IOException {
    byte[] acc = op.value("acc", r(group));
    return acc == null ? null : new DataInputStream(new ByteArrayInputStream(acc)).readLong();
  }

  @Test
  void aChangedGroupRetractsItsOldResultAndEmitsTheNewOne() throws IOException {
    Harness op = grouped();
    assertEquals(List.of(r(1, 1, 2L, 12L, 7L, "+U")), op.batch(r(1), r(1, 5L, 1), r(1, 7L, 1)));
    assertEquals(2L, count(op, 1));
    // The maximum is retracted: max falls back to the remaining row.
    assertEquals(List.of(r(-1, 1, 2L, 12L, 7L, null), r(1, 1, 1L, 5L, 5L, "+U")), op.batch(r(1), r(1, 7L, -1)));
    assertEquals(1L, count(op, 1));
  }

  @Test
  void aBatchWhoseChangesCancelEmitsNothing() throws IOException {
    Harness op = grouped();
    op.batch(r(2), r(2, 1L, 1));
    assertEquals(List.of(), op.batch(r(2), r(2, 9L, 1), r(2, 9L, -1)));
    assertEquals(1L, count(op, 2));
  }

  @Test
  void theLastRowRetractedDeletesTheGroupAndItsState() throws IOException {
    Harness op = grouped();
    op.batch(r(3), r(3, 4L, 1));
    assertEquals(List.of(r(-1, 3, 1L, 4L, 4L, "-D")), op.batch(r(3), r(3, 4L, -1)));
    assertNull(count(op, 3));
  }

  @Test
  void aGlobalAggregateKeepsItsRowWhenEmpty() throws IOException {
    Harness op = Harness.of(Engine.aggregateOp(new Aggregate(List.of(), CALLS.subList(0, 1), false, false, 0),
        INPUT));
    assertEquals(List.of(r(1, 1L, "+U")), op.batch(r(0), r(1, 4L, 1)));
    assertEquals(List.of(r(-1, 1L, null), r(1, 0L, "+U")), op.batch(r(0), r(1, 4L, -1)));
    assertNotNull(op.value("acc", r(0)));
  }

  @Test
  void aGroupUntouchedForLongerThanTheStateTtlStartsAfresh() throws Exception {
    // table.exec.state.ttl: the old result is forgotten, not retracted (as in Flink).
    Harness op = Harness.of(Engine.aggregateOp(new Aggregate(List.of("g"), CALLS, false, false, 2000), INPUT));
    op.batch(r(5), r(5, 2L, 1));
    assertEquals(List.of(r(-1, 5, 1L, 2L, 2L, null), r(1, 5, 2L, 5L, 3L, "+U")), op.batch(r(5), r(5, 3L, 1)));
    Thread.sleep(2500);
    assertEquals(List.of(r(1, 5, 1L, 4L, 4L, "+U")), op.batch(r(5), r(5, 4L, 1)));
    assertEquals(1L, count(op, 5));
  }

  @Test
  void moreRetractionsThanRowsIsRefused() {
    Harness op = grouped();
    assertThrows(IllegalStateException.class, () -> op.batch(r(4), r(4, 1L, -1)));
  }
}
