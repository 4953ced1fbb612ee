package streamsql.engine.udf;

import java.lang.reflect.Method;
import org.apache.spark.sql.types.DataType;

/**
 * One {@code eval} method of a Flink scalar function, called as a Spark function: its
 * return value, converted to Spark's ({@link FlinkCall#toSpark}), is the call's value.
 */
final class ScalarCall extends FlinkCall {
  private static final long serialVersionUID = 2L;

  private final DataType returnType;

  ScalarCall(String className, String method, int arity, DataType returnType) {
    super(className, method, arity);
    this.returnType = returnType;
  }

  @Override
  Object apply(Object... args) throws Exception {
    return toSpark(invoke(args), returnType);
  }

  @Override
  void opened(Class<?> cls, Object instance, Method eval) {}
}
