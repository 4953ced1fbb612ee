package streamsql.engine.spec;

import java.util.List;

/**
 * CURRENT_WATERMARK: one constant key column, the rowtime column, the watermark's delay
 * (ms), the output column, and whether the rowtime is a TIMESTAMP (local) rather than a
 * TIMESTAMP_LTZ.
 */
public record CurrentWatermark(List<String> keys, String rowtime, long delayMs, String column, boolean local)
    implements java.io.Serializable {}
