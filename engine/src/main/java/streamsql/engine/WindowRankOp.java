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
import org.apache.spark.sql.types.StructType;

/**
 * Window Top-N and window deduplication: {@code ROW_NUMBER() OVER (PARTITION BY
 * window_start, window_end, … ORDER BY …)} kept to a range of ranks (Flink's
 * WindowRankOperator / WindowDeduplicateOperator). A window's rows wait in state until
 * the watermark passes the window's end; then the rows ranked in the range are emitted,
 * once, and the window's state is dropped.
 *
 * <p>Correctness: the key is the partition, which includes the window, so every row of
 * a window is in the key's state when its timer fires; ranking them then is ranking the
 * window's rows. Equal sort keys rank in arrival order. The output is append-only. (Rows
 * are not checked for lateness here: a window aggregation's rows reach this operator
 * only once the watermark has passed their window. A row of a window that has fired
 * would be ranked alone; Flink drops it.)
 *
 * <p>Input: the row columns, the sort columns, {@code __t} (window end − 1 ms). Output:
 * the row columns, then the rank when the query shows it.
 */
final class WindowRankOp extends TimedOperator {
  private final StructType inputSchema;
  private final int[] rowAt;
  private final int[] sortAt;
  private final boolean[] descending;
  private final boolean[] nullsFirst;
  private final int timeAt;
  private final long lower, upper;
  private final boolean showRank;
  private transient MapState<Long, Row> rows;
  private transient ValueState<Long> arrivals;

  WindowRankOp(StructType inputSchema, int[] rowAt, int[] sortAt, boolean[] descending, boolean[] nullsFirst,
               int timeAt, long lower, long upper, boolean showRank) {
    super(0);
    this.inputSchema = inputSchema;
    this.rowAt = rowAt;
    this.sortAt = sortAt;
    this.descending = descending;
    this.nullsFirst = nullsFirst;
    this.timeAt = timeAt;
    this.lower = lower;
    this.upper = upper;
    this.showRank = showRank;
  }

  @Override
  void open() {
    rows = StateVars.map(getHandle(), "rows", Encoders.LONG(), Encoders.row(inputSchema), ttl());
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
      rows.updateValue(seq++, r);
      getHandle().registerTimer(t);
    }
    arrivals.update(seq);
  }

  @Override
  void fire(Row key, long at, TimerValues time, List<Row> out) {
    List<Object[]> held = new ArrayList<>(); // {arrival, row}
    scala.collection.Iterator<scala.Tuple2<Long, Row>> it = rows.iterator();
    while (it.hasNext()) {
      scala.Tuple2<Long, Row> e = it.next();
      held.add(new Object[] {e._1(), e._2()});
    }
    Comparator<Object[]> order = (a, b) -> {
      Row x = (Row) a[1], y = (Row) b[1];
      for (int i = 0; i < sortAt.length; i++) {
        int c = Values.order(descending[i], nullsFirst[i]).compare(x.get(sortAt[i]), y.get(sortAt[i]));
        if (c != 0) {
          return c;
        }
      }
      return Long.compare((Long) a[0], (Long) b[0]);
    };
    held.sort(order);
    for (int i = 0; i < held.size(); i++) {
      long rank = i + 1;
      if (rank < lower || rank > upper) {
        continue;
      }
      Row r = (Row) held.get(i)[1];
      Object[] v = new Object[rowAt.length + (showRank ? 1 : 0)];
      for (int c = 0; c < rowAt.length; c++) {
        v[c] = r.get(rowAt[c]);
      }
      if (showRank) {
        v[rowAt.length] = rank;
      }
      out.add(RowFactory.create(v));
    }
    rows.clear();
    arrivals.clear();
  }
}
