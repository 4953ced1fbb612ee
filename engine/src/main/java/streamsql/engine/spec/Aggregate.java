package streamsql.engine.spec;

import java.util.List;

/**
 * GROUP BY with retractions: grouping columns (none: one global group), the calls, whether
 * the input is append-only, whether a call depends on the rows' order, state TTL (ms).
 */
public record Aggregate(List<String> keys, List<AggregateCall> calls, boolean appendOnly, boolean ordered,
                        long stateTtlMs) implements java.io.Serializable {}
