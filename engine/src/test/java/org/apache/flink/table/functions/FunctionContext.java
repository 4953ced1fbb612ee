package org.apache.flink.table.functions;

import org.apache.flink.api.common.functions.RuntimeContext;

/** Stand-in for Flink's FunctionContext (see org.apache.flink's package-info). */
public class FunctionContext {
  public FunctionContext(RuntimeContext context) {}
}
