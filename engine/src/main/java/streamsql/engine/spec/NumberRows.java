package streamsql.engine.spec;

/**
 * Each row's index within its partition as one more BIGINT column
 * ({@link streamsql.engine.Engine#numberRows}): the column's name.
 */
public record NumberRows(String column) implements java.io.Serializable {}
