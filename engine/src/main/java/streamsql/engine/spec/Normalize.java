package streamsql.engine.spec;

import java.util.List;

/** An upsert table's rows → signed changes: primary key, row columns, state TTL (ms, 0: none). */
public record Normalize(List<String> keys, List<String> row, long stateTtlMs) implements java.io.Serializable {}
