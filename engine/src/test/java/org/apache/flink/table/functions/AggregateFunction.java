package org.apache.flink.table.functions;

/** Stand-in for Flink's AggregateFunction (see org.apache.flink's package-info). */
public abstract class AggregateFunction<T, ACC> extends UserDefinedFunction {
  public abstract ACC createAccumulator();

  public abstract T getValue(ACC accumulator);
}
