package streamsql.engine;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import scala.Tuple2;

/**
 * Top-N and deduplication: the rows ranked within their partition, kept to a range of
 * ranks (Flink's Rank operators; deduplication is ROW_NUMBER's rank 1 by a time
 * attribute).
 *
 * <p>Input per partition: {@code __sign}, the sort key's columns, the row's columns.
 * Output: {@code __sign}, the row's columns, {@code __rnk} (the rank, when the query
 * shows it) and {@code __net} (per partition and rank, or per row).
 *
 * <p>State per partition: every row with its count, sort key and arrival number; an
 * append-only input keeps only the rows within the top N, as a row outside them can never
 * come back. Among equal sort keys the earlier arrival ranks first (the later one when
 * the order is processing time descending). For each partition a batch touches, the
 * ranked rows before and after the batch are compared and the difference is emitted.
 * ROW_NUMBER gives each row its own rank, RANK skips after ties, DENSE_RANK does not.
 */
final class RankOp extends Operator {
  static final int ROW_NUMBER = 0, RANK = 1, DENSE_RANK = 2;
  private final StructType rowSchema, sortSchema;
  private final int[] rowAt, sortAt;
  private final boolean[] descending, nullsFirst;
  private final int signAt, function;
  private final long lower, upper;
  private final boolean appendOnly, showRank, newestFirst;
  private transient MapState<Row, Row> rows;  // row -> (count, arrival, sort key ...)
  private transient ValueState<Long> arrivals;

  RankOp(StructType rowSchema, int[] rowAt, StructType sortSchema, int[] sortAt, boolean[] descending,
         boolean[] nullsFirst, int signAt, int function, long lower, long upper, boolean appendOnly,
         boolean showRank, boolean newestFirst, long ttlMillis) {
    super(ttlMillis);
    this.rowSchema = rowSchema;
    this.rowAt = rowAt;
    this.sortSchema = sortSchema;
    this.sortAt = sortAt;
    this.descending = descending;
    this.nullsFirst = nullsFirst;
    this.signAt = signAt;
    this.function = function;
    this.lower = lower;
    this.upper = upper;
    this.appendOnly = appendOnly;
    this.showRank = showRank;
    this.newestFirst = newestFirst;
  }

  @Override
  void open() {
    StructType entry = new StructType().add("n", DataTypes.LongType).add("arrival", DataTypes.LongType)
        .add("sort", sortSchema);
    rows = StateVars.map(getHandle(), "rows", Encoders.row(rowSchema), Encoders.row(entry), ttl());
    arrivals = StateVars.value(getHandle(), "arrivals", Encoders.LONG(), ttl());
  }

  /** A row kept in the partition: its count, arrival number and sort key. */
  private static final class Kept {
    long n;
    final long arrival;
    final Row sort;

    Kept(long n, long arrival, Row sort) {
      this.n = n;
      this.arrival = arrival;
      this.sort = sort;
    }
  }

  @Override
  void forget() {
    rows.clear();
    arrivals.clear();
  }

  @Override
  void process(Row key, Iterator<Row> input, List<Row> out) {
    Map<Row, Kept> kept = new LinkedHashMap<>();
    scala.collection.Iterator<Tuple2<Row, Row>> it = rows.iterator();
    while (it.hasNext()) {
      Tuple2<Row, Row> e = it.next();
      kept.put(e._1(), new Kept(e._2().getLong(0), e._2().getLong(1), e._2().getStruct(2)));
    }
    Map<Object, Long> before = ranked(kept, null);
    Long counter = arrivals.get();
    long next = counter == null ? 0 : counter;
    // The batch's changes netted per row first (they arrive in no particular order: a
    // retraction may come before the row it retracts), in the order rows first appear.
    Map<Row, Object[]> changes = new LinkedHashMap<>();
    while (input.hasNext()) {
      Row r = input.next();
      Object[] change = changes.computeIfAbsent(row(values(r, rowAt)), k -> new Object[] {0L, row(values(r, sortAt))});
      change[0] = (Long) change[0] + sign(r, signAt);
    }
    Set<Row> touched = new HashSet<>();
    for (Map.Entry<Row, Object[]> c : changes.entrySet()) {
      Row value = c.getKey();
      long sign = (Long) c.getValue()[0];
      if (sign == 0) {
        continue;
      }
      Kept entry = kept.get(value);
      if (entry == null) {
        if (sign < 0) {
          continue; // a retraction of a row never kept (outside an append-only top N)
        }
        kept.put(value, new Kept(sign, ++next, (Row) c.getValue()[1]));
      } else {
        entry.n += sign;
        if (entry.n <= 0) {
          kept.remove(value);
        }
      }
      touched.add(value);
    }
    Set<Row> within = appendOnly ? new HashSet<>() : null;
    Map<Object, Long> after = ranked(kept, within);
    if (appendOnly) { // nothing is retracted: a row below the top N never returns
      kept.keySet().retainAll(within);
    }
    emit(before, after, out);
    for (Row r : touched) {
      Kept entry = kept.get(r);
      if (entry == null) {
        rows.removeKey(r);
      }
    }
    if (appendOnly) {
      rows.clear();
    }
    for (Map.Entry<Row, Kept> e : kept.entrySet()) {
      if (appendOnly || touched.contains(e.getKey())) {
        Kept k = e.getValue();
        rows.updateValue(e.getKey(), row(new Object[] {k.n, k.arrival, k.sort}));
      }
    }
    if (kept.isEmpty()) {
      arrivals.clear();
    } else if (next != (counter == null ? 0 : counter)) {
      arrivals.update(next);
    }
  }

  private Comparator<Map.Entry<Row, Kept>> order() {
    List<Comparator<Object>> items = new ArrayList<>();
    for (int i = 0; i < descending.length; i++) {
      items.add(Values.order(descending[i], nullsFirst[i]));
    }
    return (a, b) -> {
      Row x = a.getValue().sort, y = b.getValue().sort;
      for (int i = 0; i < items.size(); i++) {
        int c = items.get(i).compare(x.get(i), y.get(i));
        if (c != 0) {
          return c;
        }
      }
      int c = Long.compare(a.getValue().arrival, b.getValue().arrival);
      return newestFirst ? -c : c;
    };
  }

  /** {row or (row, rank): count} of the rows within the rank range; {@code within}
   * collects every row ranked up to the range's end. */
  private Map<Object, Long> ranked(Map<Row, Kept> kept, Set<Row> within) {
    List<Map.Entry<Row, Kept>> entries = new ArrayList<>(kept.entrySet());
    entries.sort(order());
    Map<Object, Long> out = new HashMap<>();
    long position = 0, rank = 0, dense = 0;
    Row previous = null;
    for (Map.Entry<Row, Kept> e : entries) {
      for (long copy = 0; copy < e.getValue().n; copy++) {
        position++;
        Row sort = e.getValue().sort;
        if (function == ROW_NUMBER) {
          rank = position;
        } else if (previous == null || !sort.equals(previous)) {
          dense++;
          rank = function == RANK ? position : dense;
        }
        previous = sort;
        if (rank > upper) {
          return out;
        }
        if (within != null) {
          within.add(e.getKey());
        }
        if (rank >= lower) {
          Object entry = showRank ? new Tuple2<>(e.getKey(), rank) : e.getKey();
          out.merge(entry, 1L, Long::sum);
        }
      }
    }
    return out;
  }

  @SuppressWarnings("unchecked")
  private void emit(Map<Object, Long> before, Map<Object, Long> after, List<Row> out) {
    Map<Object, Long> change = new LinkedHashMap<>();
    for (Map.Entry<Object, Long> e : before.entrySet()) {
      long d = after.getOrDefault(e.getKey(), 0L) - e.getValue();
      if (d < 0) {
        change.put(e.getKey(), d);
      }
    }
    for (Map.Entry<Object, Long> e : after.entrySet()) {
      long d = e.getValue() - before.getOrDefault(e.getKey(), 0L);
      if (d > 0) {
        change.put(e.getKey(), d);
      }
    }
    // Net per rank (when shown) or per row: does the same net key also insert?
    Set<Object> inserting = new HashSet<>();
    for (Map.Entry<Object, Long> e : change.entrySet()) {
      if (e.getValue() > 0) {
        inserting.add(netKey(e.getKey()));
      }
    }
    for (Map.Entry<Object, Long> e : change.entrySet()) {
      Row r;
      Long rank = null;
      if (showRank) {
        Tuple2<Row, Long> t = (Tuple2<Row, Long>) e.getKey();
        r = t._1();
        rank = t._2();
      } else {
        r = (Row) e.getKey();
      }
      int sign = (int) (long) e.getValue();
      Object[] v = new Object[r.length() + 3];
      v[0] = sign;
      for (int i = 0; i < r.length(); i++) {
        v[i + 1] = r.get(i);
      }
      v[r.length() + 1] = rank;
      v[r.length() + 2] = net(sign, inserting.contains(netKey(e.getKey())));
      out.add(row(v));
    }
  }

  @SuppressWarnings("unchecked")
  private Object netKey(Object entry) {
    return showRank ? ((Tuple2<Row, Long>) entry)._2() : entry;
  }
}
