package streamsql.engine.spec;

/**
 * A user's Flink table function registered as a Spark function
 * ({@link streamsql.engine.udf.FlinkFunctions#registerTable}): the Spark function's name,
 * the Flink function's class, its eval method (as {@code Method.toGenericString()} writes
 * it), the Spark type (DDL) of one output row — a struct, one field per output column —,
 * whether the function collects Flink {@code Row}s (false: one atomic value per output row),
 * and whether it is deterministic. The Spark function returns an array of such structs per
 * call: the rows {@code eval} collected.
 */
public record TableFunction(String name, String className, String method, String outputType, boolean rowOutput,
                            boolean deterministic) implements java.io.Serializable {}
