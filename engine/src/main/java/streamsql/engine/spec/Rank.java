package streamsql.engine.spec;

import java.util.List;

/**
 * Top-N: PARTITION BY columns, row columns, ORDER BY, function (row_number | rank |
 * dense_rank), the first and last rank kept, append-only input, rank shown, the later of
 * equal rows first, state TTL (ms).
 */
public record Rank(List<String> keys, List<String> row, List<SortKey> sort, String function, long lower, long upper,
                   boolean appendOnly, boolean showRank, boolean newestFirst, long stateTtlMs)
    implements java.io.Serializable {}
