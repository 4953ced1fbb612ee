package streamsql.engine.spec;

import org.apache.spark.sql.types.DataType;

/**
 * One aggregate function call of a GROUP BY or an OVER window (job/changelog/specs.py:
 * AggregateCall): the engine's function name, its output column, its result's Spark type
 * (Spark's type JSON), its argument column (null for COUNT(*)), DISTINCT, LISTAGG's
 * separator (null: ','), and for LAG the offset and the default's column (or null).
 */
public record AggregateCall(String function, String column, String resultType, String argument, boolean distinct,
                            String separator, long lagOffset, String lagDefault) implements java.io.Serializable {
  public DataType result() {
    return DataType.fromJson(resultType);
  }

  public String separatorOrDefault() {
    return separator == null ? "," : separator;
  }
}
