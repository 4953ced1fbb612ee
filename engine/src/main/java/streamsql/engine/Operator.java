package streamsql.engine;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
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

  Operator(long ttlMillis) {
    this.ttlMillis = ttlMillis;
  }

  /** Flink's {@code table.exec.state.ttl}: state not touched for this long is dropped. */
  final TTLConfig ttl() {
    return ttlMillis > 0 ? new TTLConfig(Duration.ofMillis(ttlMillis)) : TTLConfig.NONE();
  }

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    open();
  }

  /** Declare the state variables (called on the executor, once per task). */
  abstract void open();

  @Override
  public final Iterator<Row> handleInputRows(Row key, Iterator<Row> rows, TimerValues timerValues) {
    List<Row> out = new ArrayList<>();
    process(key, CollectionConverters.asJava(rows), out);
    return CollectionConverters.asScala(out.iterator());
  }

  abstract void process(Row key, java.util.Iterator<Row> rows, List<Row> out);

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
