package streamsql.engine.spec;

import java.util.List;

/** The rows of a SESSION window: PARTITION BY columns, row columns, event time (ms), the gap (ms). */
public record SessionRows(List<String> keys, List<String> row, String time, long gapMs)
    implements java.io.Serializable {}
