package org.apache.flink.table.functions;

import org.apache.flink.util.Collector;

/** Stand-in for Flink's TableFunction (see org.apache.flink's package-info). */
public abstract class TableFunction<T> extends UserDefinedFunction {
  private Collector<T> collector;

  public final void setCollector(Collector<T> collector) {
    this.collector = collector;
  }

  protected final void collect(T row) {
    collector.collect(row);
  }

  public void finish() throws Exception {}
}
