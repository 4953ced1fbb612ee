package org.apache.flink.util;

/** Stand-in for Flink's Collector (see org.apache.flink's package-info). */
public interface Collector<T> {
  void collect(T record);

  void close();
}
