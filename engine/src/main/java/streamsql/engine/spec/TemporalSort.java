package streamsql.engine.spec;

import java.util.List;

/**
 * Temporal sort: the row columns, the event time in ms (the first ORDER BY key) and the
 * ORDER BY keys after it.
 */
public record TemporalSort(List<String> row, String time, List<SortKey> sort) implements java.io.Serializable {}
