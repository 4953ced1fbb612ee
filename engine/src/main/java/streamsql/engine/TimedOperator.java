package streamsql.engine;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.ExpiredTimerInfo;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import scala.collection.Iterator;
import scala.jdk.javaapi.CollectionConverters;

/**
 * What the event-time operators share (OVER, temporal join, window operators): like
 * {@link Operator}, one call per key and micro-batch with that key's rows, state in
 * Spark's state store; in addition, event-time timers. A row waits in state until the
 * watermark passes its time, then the operator emits what Flink emits at that watermark.
 *
 * <p>Spark fires a key's expired timers after the batch's input, in ascending time, with
 * the batch's watermark. An operator here handles <em>everything</em> the watermark has
 * passed at the first timer of a key and batch (several timers of one key then cost one
 * pass over its state, and the later ones find nothing left to do). The output of these
 * operators is append-only: a row is emitted once its inputs can no longer change.
 */
abstract class TimedOperator extends StatefulProcessor<Row, Row, Row> {
  private final long ttlMillis;

  TimedOperator(long ttlMillis) {
    this.ttlMillis = ttlMillis;
  }

  /** Flink's {@code table.exec.state.ttl} (processing time, as in Flink). */
  final TTLConfig ttl() {
    return ttlMillis > 0 ? new TTLConfig(Duration.ofMillis(ttlMillis)) : TTLConfig.NONE();
  }

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    open();
  }

  abstract void open();

  @Override
  public final Iterator<Row> handleInputRows(Row key, Iterator<Row> rows, TimerValues timerValues) {
    List<Row> out = new ArrayList<>();
    process(key, CollectionConverters.asJava(rows), timerValues, out);
    return CollectionConverters.asScala(out.iterator());
  }

  @Override
  public final Iterator<Row> handleExpiredTimer(Row key, TimerValues timerValues, ExpiredTimerInfo info) {
    List<Row> out = new ArrayList<>();
    fire(key, info.getExpiryTimeInMs(), timerValues, out);
    return CollectionConverters.asScala(out.iterator());
  }

  abstract void process(Row key, java.util.Iterator<Row> rows, TimerValues time, List<Row> out);

  /** A timer of this key at {@code at} expired: the watermark has passed it. */
  void fire(Row key, long at, TimerValues time, List<Row> out) {}

  @Override
  public void close() {}

  /**
   * The input rows whose time (column {@code timeAt}) is after {@code emitted}, put in
   * {@code pending} under (time, arrival number from {@code seq}), each with a timer at its
   * time; a row at or before the last time emitted is late and dropped, as Flink drops it
   * (so is a row without a time). A row the watermark has passed already but that is not
   * late still waits for its timer: Spark fires it after this batch's input, as Flink fires
   * it at the next watermark. Returns the next arrival number.
   */
  final long hold(java.util.Iterator<Row> input, int timeAt, long emitted, long seq,
                  org.apache.spark.sql.streaming.MapState<Row, Row> pending) {
    while (input.hasNext()) {
      Row r = input.next();
      long t = millis(r, timeAt);
      if (t == Long.MIN_VALUE || t <= emitted) {
        continue;
      }
      pending.updateValue(org.apache.spark.sql.RowFactory.create(t, seq++), r);
      getHandle().registerTimer(t);
    }
    return seq;
  }

  /** A long column's value; NULL as Long.MIN_VALUE (a NULL time never fires). */
  static long millis(Row row, int at) {
    return row.isNullAt(at) ? Long.MIN_VALUE : ((Number) row.get(at)).longValue();
  }
}
