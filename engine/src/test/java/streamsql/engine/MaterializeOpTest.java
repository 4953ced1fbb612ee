package streamsql.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static streamsql.engine.Harness.r;

import java.util.List;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import streamsql.engine.spec.Materialize;
import streamsql.engine.spec.NetChanges;

/** Changes → the latest row per sink key (materialize, with state) or per batch (netChanges, without). */
class MaterializeOpTest {
  static final StructType INPUT = Harness.schema("id INT, name STRING, __sign INT");

  @Test
  void theLatestRowPerKeyIsUpsertedAndARetractedOneFallsBackToTheRowBefore() {
    Harness op = Harness.of(Engine.materializeOp(new Materialize(List.of("id"), List.of("id", "name"), 0), INPUT));
    assertEquals(List.of(r(1, "a", "+U")), op.batch(r(1), r(1, "a", 1)));
    assertEquals(List.of(r(1, "b", "+U")), op.batch(r(1), r(1, "b", 1)));
    assertEquals(List.of(r(r(1, "a"), 1L), r(r(1, "b"), 1L)), op.list("rows", r(1)));
    // b retracted: the key shows a again (Flink's SinkUpsertMaterializer).
    assertEquals(List.of(r(1, "a", "+U")), op.batch(r(1), r(1, "b", -1)));
    assertEquals(List.of(r(1, "a", "-D")), op.batch(r(1), r(1, "a", -1)));
    assertEquals(List.of(), op.list("rows", r(1)));
  }

  @Test
  void aBatchThatLeavesTheShownRowEmitsNothing() {
    Harness op = Harness.of(Engine.materializeOp(new Materialize(List.of("id"), List.of("id", "name"), 0), INPUT));
    op.batch(r(2), r(2, "a", 1));
    assertEquals(List.of(), op.batch(r(2), r(2, "z", 1), r(2, "z", -1)));
  }

  @Test
  void netChangesGivesOneUpsertOrDeletePerKeyAndKeepsNoState() {
    Harness op = Harness.of(Engine.netOp(new NetChanges(List.of("id"), List.of("id", "name")), INPUT));
    assertEquals(List.of(r(3, "new", "+U")), op.batch(r(3), r(3, "old", -1), r(3, "new", 1)));
    assertEquals(List.of(r(3, "new", "-D")), op.batch(r(3), r(3, "new", -1)));
    assertEquals(List.of(), op.batch(r(3), r(3, "x", 1), r(3, "x", -1)));
  }
}
