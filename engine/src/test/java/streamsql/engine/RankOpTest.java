package streamsql.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static streamsql.engine.Harness.r;
import static streamsql.engine.Harness.sorted;

import java.util.List;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import streamsql.engine.spec.Rank;
import streamsql.engine.spec.SortKey;

/** Top-N: a partition's ranked rows before and after a batch, and the difference emitted. */
class RankOpTest {
  static final StructType INPUT = Harness.schema("p INT, name STRING, score BIGINT, __sign INT");

  static Harness top(String function, long upper, boolean showRank) {
    Rank spec = new Rank(List.of("p"), List.of("name", "score"), List.of(new SortKey("score", true, false)),
        function, 1, upper, false, showRank, false, 0);
    return Harness.of(Engine.rankOp(spec, INPUT));
  }

  @Test
  void aRowEnteringTheTopNPushesTheLastOneOut() {
    Harness op = top("row_number", 2, false);
    assertEquals(sorted(r(1, "a", 10L, null, "+U"), r(1, "b", 20L, null, "+U")),
        sorted(op.batch(r(1), r(1, "a", 10L, 1), r(1, "b", 20L, 1))));
    assertEquals(sorted(r(-1, "a", 10L, null, "-D"), r(1, "c", 30L, null, "+U")),
        sorted(op.batch(r(1), r(1, "c", 30L, 1))));
    assertEquals(3, op.map("rows", r(1)).size(), "a retracting input keeps every row: one may come back");
    // c retracted: a comes back into the top 2.
    assertEquals(sorted(r(-1, "c", 30L, null, "-D"), r(1, "a", 10L, null, "+U")),
        sorted(op.batch(r(1), r(1, "c", 30L, -1))));
  }

  @Test
  void aShownRankMovesEveryRowBelowANewOne() {
    Harness op = top("rank", 3, true);
    op.batch(r(2), r(2, "a", 10L, 1), r(2, "b", 20L, 1));
    assertEquals(sorted(r(-1, "a", 10L, 2L, null), r(-1, "b", 20L, 1L, null), r(1, "c", 30L, 1L, "+U"),
            r(1, "b", 20L, 2L, "+U"), r(1, "a", 10L, 3L, "+U")),
        sorted(op.batch(r(2), r(2, "c", 30L, 1))));
  }

  @Test
  void eachCopyOfAnEqualRowRanksByItsOwnArrival() {
    // LIMIT 2 without a sort key: every row sorts equal, so arrival decides, copy by copy.
    Rank spec = new Rank(List.of("p"), List.of("name"), List.of(new SortKey("k", false, true)), "row_number", 1, 2,
        true, false, false, 0);
    Harness op = Harness.of(Engine.rankOp(spec, Harness.schema("p INT, name STRING, k INT, __sign INT")));
    assertEquals(sorted(r(1, "s2", null, "+U"), r(1, "s1", null, "+U")),
        sorted(op.batch(r(1), r(1, "s2", 0, 1), r(1, "s1", 0, 1), r(1, "s2", 0, 1))));
    assertEquals(List.of(), op.batch(r(1), r(1, "s2", 0, 1)), "a later copy of s2 ranks after s1");
    assertEquals(2, op.map("rows", r(1)).size(), "an append-only input keeps only the copies within the top 2");
  }

  @Test
  void aRetractionRemovesTheEarliestCopyOfARow() {
    Rank spec = new Rank(List.of("p"), List.of("name"), List.of(new SortKey("k", false, true)), "row_number", 1, 2,
        false, false, false, 0);
    Harness op = Harness.of(Engine.rankOp(spec, Harness.schema("p INT, name STRING, k INT, __sign INT")));
    op.batch(r(1), r(1, "a", 0, 1), r(1, "b", 0, 1), r(1, "a", 0, 1));
    // The first a leaves: b ranks first, the second a (arrived after b) second; nothing changes.
    assertEquals(List.of(), op.batch(r(1), r(1, "a", 0, -1)));
    // b leaves: a alone.
    assertEquals(List.of(r(-1, "b", null, "-D")), op.batch(r(1), r(1, "b", 0, -1)));
  }
}
