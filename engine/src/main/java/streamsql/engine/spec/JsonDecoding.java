package streamsql.engine.spec;

import java.util.List;

/**
 * The fast JSON decoder ({@link streamsql.engine.formats.FastJson}): the envelope ("row"
 * for the json format, "debezium" for debezium-json), whether Debezium's change is inside
 * "payload" (schema-include), and the columns it reads.
 */
public record JsonDecoding(String envelope, boolean payload, List<DecodedColumn> columns)
    implements java.io.Serializable {}
