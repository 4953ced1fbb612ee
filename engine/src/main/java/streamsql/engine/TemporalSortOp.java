package streamsql.engine;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import scala.Tuple2;

/**
 * A stream sorted by event time: {@code ORDER BY ts [, k …]} without LIMIT, ts an
 * event-time attribute ascending (Flink's temporal sort, RowTimeSortOperator). A row waits
 * until the watermark passes its time; then the rows the watermark has passed come out in
 * time order, rows of one time ordered by the other keys, and by arrival among equal keys.
 * A row whose time is not after the last time emitted is late and dropped, as Flink drops
 * it. The output is append-only.
 *
 * <p>Correctness: the operator runs on one key (the whole stream, as Flink runs it with
 * parallelism 1), so every row is in its state when a timer fires, and each flush emits
 * every row whose time the watermark has passed, sorted. A later flush can only emit
 * later times: a row at or before the last time emitted is dropped on arrival, and the rows
 * left in state are after the watermark of the flush that kept them. So the output is
 * sorted across flushes and batches too. Spark fires the key's timers after the batch's
 * input, in ascending time, with one watermark: the first one flushes, the others find the
 * watermark already flushed and return (one pass over the state per batch, not per timer).
 *
 * <p>State: the rows not emitted yet, map (time, arrival) → row, and the progress: the
 * next arrival number, the last time emitted, the last watermark flushed.
 */
final class TemporalSortOp extends TimedOperator {
  private final StructType inputSchema;
  private final int[] rowAt;
  private final int timeAt;
  private final int[] sortAt;
  private final boolean[] descending, nullsFirst;
  private transient MapState<Row, Row> pending;
  private transient ValueState<Row> progress;

  private static final StructType POSITION = new StructType()
      .add("t", DataTypes.LongType, false).add("seq", DataTypes.LongType, false);
  private static final StructType PROGRESS = new StructType().add("seq", DataTypes.LongType, false)
      .add("emitted", DataTypes.LongType, false).add("flushed", DataTypes.LongType, false);

  TemporalSortOp(StructType inputSchema, int[] rowAt, int timeAt, int[] sortAt, boolean[] descending,
                 boolean[] nullsFirst) {
    super(0);
    this.inputSchema = inputSchema;
    this.rowAt = rowAt;
    this.timeAt = timeAt;
    this.sortAt = sortAt;
    this.descending = descending;
    this.nullsFirst = nullsFirst;
  }

  @Override
  void open() {
    pending = StateVars.map(getHandle(), "pending", Encoders.row(POSITION), Encoders.row(inputSchema), ttl());
    progress = StateVars.value(getHandle(), "progress", Encoders.row(PROGRESS), ttl());
  }

  @Override
  void process(Row key, Iterator<Row> input, TimerValues time, List<Row> out) {
    Row p = progress.get();
    long seq = p == null ? 0 : p.getLong(0);
    long emitted = p == null ? Long.MIN_VALUE : p.getLong(1);
    long flushed = p == null ? Long.MIN_VALUE : p.getLong(2);
    long next = hold(input, timeAt, emitted, seq, pending);
    if (next != seq) {
      progress.update(RowFactory.create(next, emitted, flushed));
    }
  }

  @Override
  void fire(Row key, long at, TimerValues time, List<Row> out) {
    long watermark = time.getCurrentWatermarkInMs();
    Row p = progress.get();
    if (p == null || p.getLong(2) >= watermark) {
      return; // an earlier timer of this batch flushed everything this watermark passed
    }
    List<Object[]> ready = new ArrayList<>(); // {time, arrival, row}
    scala.collection.Iterator<Tuple2<Row, Row>> it = pending.iterator();
    while (it.hasNext()) {
      Tuple2<Row, Row> e = it.next();
      long t = e._1().getLong(0);
      if (t <= watermark) {
        ready.add(new Object[] {t, e._1().getLong(1), e._2()});
      }
    }
    ready.sort(order());
    long emitted = p.getLong(1);
    for (Object[] e : ready) {
      Row r = (Row) e[2];
      Object[] v = new Object[rowAt.length];
      for (int c = 0; c < rowAt.length; c++) {
        v[c] = r.get(rowAt[c]);
      }
      out.add(RowFactory.create(v));
      pending.removeKey(RowFactory.create(e[0], e[1]));
      emitted = Math.max(emitted, (Long) e[0]);
    }
    progress.update(RowFactory.create(p.getLong(0), emitted, watermark));
  }

  /** Time, then the other ORDER BY keys, then arrival. */
  private Comparator<Object[]> order() {
    return (a, b) -> {
      int c = Long.compare((Long) a[0], (Long) b[0]);
      Row x = (Row) a[2], y = (Row) b[2];
      for (int i = 0; c == 0 && i < sortAt.length; i++) {
        c = Values.order(descending[i], nullsFirst[i]).compare(x.get(sortAt[i]), y.get(sortAt[i]));
      }
      return c != 0 ? c : Long.compare((Long) a[1], (Long) b[1]);
    };
  }
}
