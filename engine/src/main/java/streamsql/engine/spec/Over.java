package streamsql.engine.spec;

import java.util.List;

/**
 * OVER aggregation: PARTITION BY columns, the columns passed on, a ROWS (else RANGE)
 * frame, its PRECEDING bound (-1: UNBOUNDED), the calls, and the event-time column in
 * ms (null: processing time).
 */
public record Over(List<String> keys, List<String> row, boolean rows, long preceding, List<AggregateCall> calls,
                   String time) implements java.io.Serializable {}
