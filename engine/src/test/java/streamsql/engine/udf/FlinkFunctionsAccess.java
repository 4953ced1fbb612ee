package streamsql.engine.udf;

import streamsql.engine.spec.FunctionDescription;

/** Test access to {@link FlinkFunctions#describe(ClassLoader, String)} from other packages. */
public final class FlinkFunctionsAccess {
  private FlinkFunctionsAccess() {}

  public static FunctionDescription describe(String className) throws ReflectiveOperationException {
    return FlinkFunctions.describe(FlinkFunctionsAccess.class.getClassLoader(), className);
  }
}
