package streamsql.engine;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.StructType;

/**
 * Window join: two window table functions' rows joined on their windows and keys
 * ({@code L.window_start = R.window_start AND L.window_end = R.window_end AND L.k = R.k},
 * Flink's WindowJoinOperator). Both sides' rows of a window wait in state until the
 * watermark passes the window's end; then the window's pairs are emitted once (an outer
 * join also its unmatched rows, padded with NULLs) and the window's state is dropped.
 *
 * <p>Correctness: the key holds the window, so when its timer fires every row of the
 * window on either side is in state; the window's join is then the product of the two
 * sides' rows, computed once. The output is append-only.
 *
 * <p>Input: the key, {@code __side} (0 left, 1 right), {@code __t} (window end − 1 ms),
 * both sides' columns. Output: the left columns and the right columns.
 */
final class WindowJoinOp extends TimedOperator {
  private final StructType leftSchema, rightSchema;
  private final int[] leftAt, rightAt;
  private final int sideAt, timeAt;
  private final boolean padLeft, padRight; // emit unmatched left (right) rows padded
  private transient MapState<Long, Row> left, right;
  private transient ValueState<Long> arrivals;

  WindowJoinOp(StructType leftSchema, StructType rightSchema, int[] leftAt, int[] rightAt, int sideAt, int timeAt,
               boolean padLeft, boolean padRight) {
    super(0);
    this.leftSchema = leftSchema;
    this.rightSchema = rightSchema;
    this.leftAt = leftAt;
    this.rightAt = rightAt;
    this.sideAt = sideAt;
    this.timeAt = timeAt;
    this.padLeft = padLeft;
    this.padRight = padRight;
  }

  @Override
  void open() {
    left = StateVars.map(getHandle(), "left", Encoders.LONG(), Encoders.row(leftSchema), ttl());
    right = StateVars.map(getHandle(), "right", Encoders.LONG(), Encoders.row(rightSchema), ttl());
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
        continue;
      }
      if (((Number) r.get(sideAt)).intValue() == 0) {
        left.updateValue(seq++, Operator.row(Operator.values(r, leftAt)));
      } else {
        right.updateValue(seq++, Operator.row(Operator.values(r, rightAt)));
      }
      getHandle().registerTimer(t);
    }
    arrivals.update(seq);
  }

  @Override
  void fire(Row key, long at, TimerValues time, List<Row> out) {
    List<Row> ls = rowsOf(left), rs = rowsOf(right);
    boolean[] rightMatched = new boolean[rs.size()];
    for (Row l : ls) {
      boolean matched = false;
      for (int j = 0; j < rs.size(); j++) {
        out.add(joined(l, rs.get(j)));
        matched = true;
        rightMatched[j] = true;
      }
      if (!matched && padLeft) {
        out.add(joined(l, null));
      }
    }
    for (int j = 0; j < rs.size(); j++) {
      if (!rightMatched[j] && padRight) {
        out.add(joined(null, rs.get(j)));
      }
    }
    left.clear();
    right.clear();
    arrivals.clear();
  }

  /** A side's rows in arrival order. */
  private static List<Row> rowsOf(MapState<Long, Row> side) {
    List<scala.Tuple2<Long, Row>> held = new ArrayList<>();
    scala.collection.Iterator<scala.Tuple2<Long, Row>> it = side.iterator();
    while (it.hasNext()) {
      held.add(it.next());
    }
    held.sort((a, b) -> Long.compare(a._1(), b._1()));
    List<Row> out = new ArrayList<>(held.size());
    for (scala.Tuple2<Long, Row> e : held) {
      out.add(e._2());
    }
    return out;
  }

  private Row joined(Row l, Row r) {
    Object[] v = new Object[leftAt.length + rightAt.length];
    for (int i = 0; i < leftAt.length; i++) {
      v[i] = l == null ? null : l.get(i);
    }
    for (int i = 0; i < rightAt.length; i++) {
      v[leftAt.length + i] = r == null ? null : r.get(i);
    }
    return RowFactory.create(v);
  }
}
