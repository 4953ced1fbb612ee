package streamsql.engine.spec;

import java.util.List;

/**
 * Event-time temporal join: the key parts, the left and right columns, the event time
 * column (ms), the right side's retraction column, LEFT JOIN.
 */
public record TemporalJoin(List<String> keys, List<String> left, List<String> right, String time, String retract,
                           boolean leftOuter) implements java.io.Serializable {}
