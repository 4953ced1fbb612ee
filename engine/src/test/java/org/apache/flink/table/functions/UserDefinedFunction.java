package org.apache.flink.table.functions;

/** Stand-in for Flink's UserDefinedFunction (see org.apache.flink's package-info). */
public abstract class UserDefinedFunction {
  public void open(FunctionContext context) throws Exception {}

  public void close() throws Exception {}

  public boolean isDeterministic() {
    return true;
  }
}
