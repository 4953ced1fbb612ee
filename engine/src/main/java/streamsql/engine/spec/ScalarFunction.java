package streamsql.engine.spec;

/**
 * A user's Flink scalar function registered as a Spark function
 * ({@link streamsql.engine.udf.FlinkFunctions#register}): the Spark function's name, the
 * Flink function's class, its eval method (as {@code Method.toGenericString()} writes it),
 * the result's Spark type (DDL), and whether it is deterministic.
 */
public record ScalarFunction(String name, String className, String method, String resultType,
                             boolean deterministic) implements java.io.Serializable {}
