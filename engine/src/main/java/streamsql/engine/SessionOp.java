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

/**
 * The rows of a SESSION window table function: each row with the session it belongs to
 * ({@code SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), gap)}). A row at time t opens
 * the window [t, t + gap); overlapping windows of one partition merge into one session,
 * [first row's time, last row's time + gap). A session can still grow until the
 * watermark passes its end, so its rows wait in state until then; then they are emitted
 * with the session's start and end, once, and forgotten.
 *
 * <p>Correctness: the key is the partition; when the watermark passes a session's end
 * minus one millisecond (Flink's window time), no row that could extend it can still
 * come without being late, so its rows and bounds are final (the output is
 * append-only). Sessions still open stay in state with their rows.
 *
 * <p>Input: the row columns and {@code __t} (the row's time, ms). Output: the row
 * columns, then {@code __start} and {@code __end} (ms).
 */
final class SessionOp extends TimedOperator {
  private final StructType inputSchema;
  private final int[] rowAt;
  private final int timeAt;
  private final long gap;
  private transient MapState<Row, Row> rows; // (time, arrival) → row
  private transient ValueState<Long> arrivals;

  private static final StructType POSITION = new StructType()
      .add("t", DataTypes.LongType, false).add("seq", DataTypes.LongType, false);

  SessionOp(StructType inputSchema, int[] rowAt, int timeAt, long gap) {
    super(0);
    this.inputSchema = inputSchema;
    this.rowAt = rowAt;
    this.timeAt = timeAt;
    this.gap = gap;
  }

  @Override
  void open() {
    rows = StateVars.map(getHandle(), "rows", Encoders.row(POSITION), Encoders.row(inputSchema), ttl());
    arrivals = StateVars.value(getHandle(), "arrivals", Encoders.LONG(), ttl());
  }

  @Override
  void process(Row key, Iterator<Row> input, TimerValues time, List<Row> out) {
    Long stored = arrivals.get();
    long seq = stored == null ? 0 : stored;
    while (input.hasNext()) {
      Row r = input.next();
      long t = millis(r, timeAt);
      if (t == Long.MIN_VALUE) {
        continue;
      }
      rows.updateValue(RowFactory.create(t, seq++), r);
      getHandle().registerTimer(t + gap - 1);
    }
    arrivals.update(seq);
  }

  @Override
  void fire(Row key, long at, TimerValues time, List<Row> out) {
    long watermark = time.getCurrentWatermarkInMs();
    List<Object[]> held = new ArrayList<>(); // {time, arrival, row}
    scala.collection.Iterator<scala.Tuple2<Row, Row>> it = rows.iterator();
    while (it.hasNext()) {
      scala.Tuple2<Row, Row> e = it.next();
      held.add(new Object[] {e._1().getLong(0), e._1().getLong(1), e._2()});
    }
    held.sort(Comparator.<Object[]>comparingLong(a -> (Long) a[0]).thenComparingLong(a -> (Long) a[1]));
    int from = 0;
    while (from < held.size()) {
      long start = (Long) held.get(from)[0];
      long end = start + gap;
      int to = from + 1;
      while (to < held.size() && (Long) held.get(to)[0] < end) {
        end = Math.max(end, (Long) held.get(to)[0] + gap);
        to++;
      }
      if (end - 1 <= watermark) {
        for (int i = from; i < to; i++) {
          Row r = (Row) held.get(i)[2];
          Object[] v = new Object[rowAt.length + 2];
          for (int c = 0; c < rowAt.length; c++) {
            v[c] = r.get(rowAt[c]);
          }
          v[rowAt.length] = start;
          v[rowAt.length + 1] = end;
          out.add(RowFactory.create(v));
          rows.removeKey(RowFactory.create(held.get(i)[0], held.get(i)[1]));
        }
      }
      from = to;
    }
  }
}
