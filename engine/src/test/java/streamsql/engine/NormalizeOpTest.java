package streamsql.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static streamsql.engine.Harness.r;

import java.util.List;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import streamsql.engine.spec.Normalize;

/** Upserts → signed changes: the latest row per key wins, with its source position. */
class NormalizeOpTest {
  // The input as the planner stages it: the row's columns and the upsert columns.
  static final StructType INPUT = Harness.schema("id INT, name STRING, kind STRING, seq_major STRING, seq_minor BIGINT");
  static final Normalize SPEC = new Normalize(List.of("id"), List.of("id", "name"), 0);

  final Harness op = Harness.of(Engine.normalizeOp(SPEC, INPUT));

  @Test
  void theLatestUpsertOfABatchReplacesTheKeysRow() {
    assertEquals(List.of(r(1, 1, "a", "f", 2L)),
        op.batch(r(1), r(1, "x", "U", "f", 1L), r(1, "a", "U", "f", 2L)));
    assertEquals(r(1, "a"), op.value("row", r(1)));
    // The next batch retracts the old row at its first record and inserts the new one at its latest.
    assertEquals(List.of(r(-1, 1, "a", "g", 0L), r(1, 1, "b", "g", 5L)),
        op.batch(r(1), r(1, "b", "U", "g", 5L), r(1, "c", "U", "g", 0L)));
    assertEquals(r(1, "b"), op.value("row", r(1)));
  }

  @Test
  void aRepeatedRowEmitsNothingAndADeleteRetractsIt() {
    op.batch(r(7), r(7, "a", "U", "f", 1L));
    assertEquals(List.of(), op.batch(r(7), r(7, "a", "U", "f", 2L)));
    assertEquals(List.of(r(-1, 7, "a", "f", 3L)), op.batch(r(7), r(7, null, "D", "f", 3L)));
    assertNull(op.value("row", r(7)));
    // A tombstone for a key that holds nothing is harmless.
    assertEquals(List.of(), op.batch(r(8), r(8, null, "D", "f", 4L)));
  }
}
