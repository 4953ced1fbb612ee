package streamsql.engine.spec;

import java.util.List;

/** The latest row per sink key: the sink's primary key, its columns, state TTL (ms). */
public record Materialize(List<String> keys, List<String> row, long stateTtlMs) implements java.io.Serializable {}
