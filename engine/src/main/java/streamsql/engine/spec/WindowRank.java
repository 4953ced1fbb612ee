package streamsql.engine.spec;

import java.util.List;

/**
 * Window Top-N / deduplication: PARTITION BY (with the window bounds), row columns, ORDER
 * BY, the time a window is ranked at (its end − 1 ms), the first and last rank kept, rank shown.
 */
public record WindowRank(List<String> keys, List<String> row, List<SortKey> sort, String time, long lower,
                         long upper, boolean showRank) implements java.io.Serializable {}
