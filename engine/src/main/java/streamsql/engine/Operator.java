package streamsql.engine;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import scala.collection.Iterator;
import scala.jdk.javaapi.CollectionConverters;

/**
 * What every changelog operator shares: it is called once per key and micro-batch with
 * that key's input rows, keeps the key's state in Spark's state store (RocksDB,
 * checkpointed with the query), and emits <em>signed</em> rows: {@code +n} adds n
 * copies of a row to the result, {@code -n} retracts them.
 *
 * <p>The correctness argument of every operator: for each key a batch touches, compute
 * the key's output before and after the batch and emit the difference. The sink then
 * receives exactly the change between two consistent states, whatever the order of the
 * changes inside the batch (multiset arithmetic commutes).
 */
abstract class Operator extends StatefulProcessor<Row, Row, Row> {
  private final long ttlMillis;
  private transient ValueState<Long> touched;

  Operator(long ttlMillis) {
    this.ttlMillis = ttlMillis;
  }

  /**
   * The state variables' own TTL: none. Spark gives state a TTL only in processing-time
   * mode, whose operators ask for a batch after every batch (a {@code --once} run would
   * never end); Flink's {@code table.exec.state.ttl} is kept by the operator's clock
   * instead (see {@link #handleInputRows}).
   */
  final TTLConfig ttl() {
    return TTLConfig.NONE();
  }

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    open();
    if (ttlMillis > 0) {
      touched = StateVars.value(getHandle(), "__touched", Encoders.LONG(), TTLConfig.NONE());
    }
  }

  /** Declare the state variables (called on the executor, once per task). */
  abstract void open();

  /**
   * Flink's {@code table.exec.state.ttl}: a key whose state has not been written for that
   * long (processing time) is forgotten before its new rows are processed, so it starts
   * from nothing (and nothing of the old state is retracted, as in Flink). Each operator
   * says what its key's state is in {@link #forget}.
   */
  @Override
  public final Iterator<Row> handleInputRows(Row key, Iterator<Row> rows, TimerValues timerValues) {
    long now = 0;
    boolean ttl = ttlMillis > 0 && !stateless(key);
    if (ttl) {
      now = timerValues.getCurrentProcessingTimeInMs();
      if (now <= 0) {
        now = System.currentTimeMillis();
      }
      Long last = touched.get();
      if (last != null && now - last > ttlMillis) {
        forget();
      }
    }
    List<Row> out = new ArrayList<>();
    process(key, CollectionConverters.asJava(rows), out);
    if (ttl) {
      touched.update(now);
    }
    return CollectionConverters.asScala(out.iterator());
  }

  abstract void process(Row key, java.util.Iterator<Row> rows, List<Row> out);

  /** Does the key keep no state (so no TTL either)? */
  boolean stateless(Row key) {
    return false;
  }

  /** Drop the current key's state (its TTL expired). */
  void forget() {}

  @Override
  public void close() {}

  // ------------------------------------------------------------------ helpers

  static Object[] values(Row row, int[] positions) {
    Object[] out = new Object[positions.length];
    for (int i = 0; i < positions.length; i++) {
      out[i] = row.get(positions[i]);
    }
    return out;
  }

  /** A sign column's value (INT or BIGINT, whatever the planner's expression gave). */
  static int sign(Row row, int at) {
    return ((Number) row.get(at)).intValue();
  }

  /** A position column's value (NULL first). */
  static long position(Row row, int at) {
    return row.isNullAt(at) ? Long.MIN_VALUE : ((Number) row.get(at)).longValue();
  }

  static Row row(Object[] values) {
    return RowFactory.create(values);
  }

  /**
   * The sink's net effect of an output row whose key (the operator's key) emits no other
   * row in this batch: '+U' for the row a key ends with, '-D' for a retraction nothing
   * replaces, NULL for a retraction the key's new row overwrites anyway. Exact when the
   * operator's output has at most one row per key, which the planner checks before the
   * sink relies on it.
   */
  static String net(int sign, boolean keyAlsoInserts) {
    return sign > 0 ? "+U" : keyAlsoInserts ? null : "-D";
  }
}
