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
 * Event-time temporal join: {@code FROM orders o [LEFT] JOIN rates FOR SYSTEM_TIME AS OF
 * o.ts AS r ON o.currency = r.currency} (Flink's TemporalRowTimeJoinOperator). Per join
 * key, left rows wait until the watermark passes their time; then each is joined with
 * the version of the right (versioned) table valid at that time, and a LEFT join emits
 * it padded with NULLs when there is none.
 *
 * <p>The right side is kept as Flink keeps it: one row per version time, the last row to
 * arrive with that time winning, a deletion included. The version valid at time t is the
 * row with the largest time ≤ t; if that row is a deletion, no version is valid. After
 * each firing, versions older than the watermark are dropped, except the latest of them
 * (still valid for left rows to come).
 *
 * <p>Correctness: a left row is emitted exactly once, when the watermark has passed its
 * time, with the version the right rows received so far make valid at its time; its
 * result never changes afterwards, so the output is append-only. (Flink's operator
 * waits for both inputs' watermarks; here the watermark is Spark's, the minimum over the
 * watermarked inputs, see job/plan/temporal.py.)
 *
 * <p>Input: the key, {@code __side} (0 left, 1 right), {@code __t} (the left row's AS OF
 * time, or the right row's version time, ms), {@code __retract} (right rows: a deletion),
 * then both sides' columns. Output: the left columns and the right columns (NULL when
 * padded).
 */
final class TemporalJoinOp extends TimedOperator {
  private final StructType leftSchema;
  private final StructType rightSchema;
  private final int[] leftAt;
  private final int[] rightAt;
  private final int sideAt, timeAt, retractAt;
  private final boolean leftOuter;
  private transient MapState<Row, Row> left;      // (time, arrival) → left row
  private transient MapState<Long, Row> versions; // version time → (retract, right row)
  private transient ValueState<Long> arrivals;

  private static final StructType POSITION = new StructType()
      .add("t", DataTypes.LongType, false).add("seq", DataTypes.LongType, false);

  TemporalJoinOp(StructType leftSchema, StructType rightSchema, int[] leftAt, int[] rightAt, int sideAt, int timeAt,
                 int retractAt, boolean leftOuter, long ttlMillis) {
    super(ttlMillis);
    this.leftSchema = leftSchema;
    this.rightSchema = rightSchema;
    this.leftAt = leftAt;
    this.rightAt = rightAt;
    this.sideAt = sideAt;
    this.timeAt = timeAt;
    this.retractAt = retractAt;
    this.leftOuter = leftOuter;
  }

  @Override
  void open() {
    left = StateVars.map(getHandle(), "left", Encoders.row(POSITION), Encoders.row(leftSchema), ttl());
    StructType version = new StructType().add("__retract", DataTypes.BooleanType, false);
    for (org.apache.spark.sql.types.StructField f : rightSchema.fields()) {
      version = version.add(f);
    }
    versions = StateVars.map(getHandle(), "versions", Encoders.LONG(), Encoders.row(version), ttl());
    arrivals = StateVars.value(getHandle(), "arrivals", Encoders.LONG(), ttl());
  }

  @Override
  void process(Row key, Iterator<Row> rows, TimerValues time, List<Row> out) {
    Long stored = arrivals.get();
    long seq = stored == null ? 0 : stored;
    while (rows.hasNext()) {
      Row r = rows.next();
      long t = millis(r, timeAt);
      if (t == Long.MIN_VALUE) {
        continue; // no time: never valid (right), never fires (left)
      }
      if (((Number) r.get(sideAt)).intValue() == 0) {
        left.updateValue(RowFactory.create(t, seq++), Operator.row(Operator.values(r, leftAt)));
        getHandle().registerTimer(t);
      } else {
        Object[] v = new Object[rightAt.length + 1];
        v[0] = !r.isNullAt(retractAt) && r.getBoolean(retractAt);
        for (int i = 0; i < rightAt.length; i++) {
          v[i + 1] = r.get(rightAt[i]);
        }
        versions.updateValue(t, RowFactory.create(v));
      }
    }
    arrivals.update(seq);
  }

  @Override
  void fire(Row key, long at, TimerValues time, List<Row> out) {
    long watermark = time.getCurrentWatermarkInMs();
    List<Object[]> ready = new ArrayList<>(); // {time, arrival, row}
    scala.collection.Iterator<Tuple2<Row, Row>> it = left.iterator();
    while (it.hasNext()) {
      Tuple2<Row, Row> e = it.next();
      if (e._1().getLong(0) <= watermark) {
        ready.add(new Object[] {e._1().getLong(0), e._1().getLong(1), e._2()});
      }
    }
    if (ready.isEmpty()) {
      return;
    }
    ready.sort(Comparator.comparingLong(a -> (Long) a[1])); // the left rows' arrival order
    List<Tuple2<Long, Row>> sorted = new ArrayList<>();
    scala.collection.Iterator<Tuple2<Long, Row>> vs = versions.iterator();
    while (vs.hasNext()) {
      sorted.add(vs.next());
    }
    sorted.sort(Comparator.comparingLong(Tuple2::_1));
    for (Object[] l : ready) {
      Row version = valid(sorted, (Long) l[0]);
      Row leftRow = (Row) l[2];
      if (version != null && !version.getBoolean(0)) {
        out.add(joined(leftRow, version));
      } else if (leftOuter) {
        out.add(joined(leftRow, null));
      }
      left.removeKey(RowFactory.create(l[0], l[1]));
    }
    // Versions older than the watermark are no longer needed, but for the latest of them.
    int keep = sorted.size() - 1;
    for (int i = 0; i < sorted.size(); i++) {
      if (sorted.get(i)._1() > watermark) {
        keep = i - 1;
        break;
      }
    }
    for (int i = 0; i < keep; i++) {
      versions.removeKey(sorted.get(i)._1());
    }
  }

  /** The version with the largest time ≤ t (its row, retract flag first), or null. */
  private static Row valid(List<Tuple2<Long, Row>> sorted, long t) {
    Row found = null;
    for (Tuple2<Long, Row> v : sorted) {
      if (v._1() > t) {
        break;
      }
      found = v._2();
    }
    return found;
  }

  private Row joined(Row leftRow, Row version) {
    Object[] v = new Object[leftAt.length + rightAt.length];
    for (int i = 0; i < leftAt.length; i++) {
      v[i] = leftRow.get(i);
    }
    for (int i = 0; i < rightAt.length; i++) {
      v[leftAt.length + i] = version == null ? null : version.get(i + 1);
    }
    return RowFactory.create(v);
  }
}
