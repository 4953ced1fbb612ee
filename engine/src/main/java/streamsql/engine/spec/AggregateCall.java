package streamsql.engine.spec;

import org.apache.spark.sql.types.DataType;

/**
 * One aggregate function call of a GROUP BY or an OVER window (job/changelog/specs.py:
 * AggregateCall): the engine's function name, its output column, its result's Spark type
 * (Spark's type JSON), its argument column (null for COUNT(*)), DISTINCT, LISTAGG's
 * separator (null: ','), for LAG the offset and the default's column (or null), and for a
 * user's Flink aggregate function (function "user") its class and the signatures
 * ({@code Method.toGenericString()}) of the accumulate and retract methods it calls (retract
 * null: none, the input is append-only). A user function's argument column is a struct of
 * its arguments, NULL for a row its FILTER leaves out.
 */
public record AggregateCall(String function, String column, String resultType, String argument, boolean distinct,
                            String separator, long lagOffset, String lagDefault, String className,
                            String accumulate, String retract) implements java.io.Serializable {
  public DataType result() {
    return DataType.fromJson(resultType);
  }

  public String separatorOrDefault() {
    return separator == null ? "," : separator;
  }
}
