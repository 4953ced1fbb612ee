package streamsql.engine.spec;

import java.util.List;

/**
 * Window join: the key parts with the window bounds, the left and right columns, the time
 * a window is joined at (its end − 1 ms), and which sides are padded (LEFT/RIGHT/FULL).
 */
public record WindowJoin(List<String> keys, List<String> left, List<String> right, String time, boolean padLeft,
                         boolean padRight) implements java.io.Serializable {}
