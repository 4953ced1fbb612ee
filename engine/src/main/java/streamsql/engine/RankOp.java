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
 * <p>State per partition: every row with its sort key and the arrival number of each copy
 * of it; an append-only input keeps only the copies within the top N, as one outside them
 * can never come back. Among equal sort keys the earlier arrival ranks first (the later
 * one when the order is processing time descending), copy by copy: a second copy of a row
 * ranks by its own arrival, as Flink keeps equal rows in a list in arrival order, and a
 * retraction removes the earliest copy, as Flink's does. For each partition a batch
 * touches, the ranked rows before and after the batch are compared and the difference is
 * emitted. ROW_NUMBER gives each row its own rank, RANK skips after ties, DENSE_RANK does
 * not.
 */
final class RankOp extends Operator {
  static final int ROW_NUMBER = 0, RANK = 1, DENSE_RANK = 2;
  private final StructType rowSchema, sortSchema;
  private final int[] rowAt, sortAt;
  private final boolean[] descending, nullsFirst;
  private final int signAt, function;
  private final long lower, upper;
  private final boolean appendOnly, showRank, newestFirst;
  private transient MapState<Row, Row> rows;  // row -> (arrival of each copy, ascending; sort key)
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
    StructType entry = new StructType()
        .add("arrivals", DataTypes.createArrayType(DataTypes.LongType, false)).add("sort", sortSchema);
    rows = StateVars.map(getHandle(), "rows", Encoders.row(rowSchema), Encoders.row(entry), ttl());
    arrivals = StateVars.value(getHandle(), "arrivals", Encoders.LONG(), ttl());
  }

  /** A row kept in the partition: the arrival number of each copy (ascending) and its sort key. */
  private static final class Kept {
    final List<Long> arrivals;
    final Row sort;

    Kept(List<Long> arrivals, Row sort) {
      this.arrivals = arrivals;
      this.sort = sort;
    }

    static Kept of(Row stored) {
      return new Kept(new ArrayList<>(stored.getList(0)), stored.getStruct(1));
    }

    Row stored() {
      return row(new Object[] {scala.jdk.javaapi.CollectionConverters.asScala(arrivals).toSeq(), sort});
    }
  }

  /** One copy of a kept row, as it is ranked. */
  private record Copy(Row row, Row sort, long arrival) {}

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
      kept.put(e._1(), Kept.of(e._2()));
    }
    Map<Object, Long> before = ranked(kept, null);
    Long counter = arrivals.get();
    long next = counter == null ? 0 : counter;
    // Each inserted copy takes the next arrival number in input order; the retractions are
    // counted per row and applied after (they arrive in no particular order: one may come
    // before the row it retracts), each removing the row's earliest copy.
    Map<Row, Row> sortOf = new LinkedHashMap<>();
    Map<Row, List<Long>> added = new LinkedHashMap<>();
    Map<Row, Long> retracted = new HashMap<>();
    while (input.hasNext()) {
      Row r = input.next();
      Row value = row(values(r, rowAt));
      long sign = sign(r, signAt);
      sortOf.computeIfAbsent(value, k -> row(values(r, sortAt)));
      for (long copy = 0; copy < sign; copy++) {
        added.computeIfAbsent(value, k -> new ArrayList<>()).add(++next);
      }
      if (sign < 0) {
        retracted.merge(value, -sign, Long::sum);
      }
    }
    Set<Row> touched = new HashSet<>();
    for (Row value : sortOf.keySet()) {
      Kept entry = kept.get(value);
      List<Long> copies = new ArrayList<>(entry == null ? List.of() : entry.arrivals);
      copies.addAll(added.getOrDefault(value, List.of()));
      long remove = Math.min(retracted.getOrDefault(value, 0L), copies.size());
      copies.subList(0, (int) remove).clear(); // a retraction of a row never kept is dropped
      if (entry == null && copies.isEmpty()) {
        continue;
      }
      if (copies.isEmpty()) {
        kept.remove(value);
      } else {
        kept.put(value, new Kept(copies, entry == null ? sortOf.get(value) : entry.sort));
      }
      touched.add(value);
    }
    Map<Row, Integer> within = appendOnly ? new HashMap<>() : null;
    Map<Object, Long> after = ranked(kept, within);
    if (appendOnly) { // nothing is retracted: a copy below the top N never returns
      kept.keySet().retainAll(within.keySet());
      for (Map.Entry<Row, Kept> e : kept.entrySet()) {
        List<Long> copies = e.getValue().arrivals;
        copies.subList(within.get(e.getKey()), copies.size()).clear(); // a row's earliest copies rank first
      }
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
        rows.updateValue(e.getKey(), e.getValue().stored());
      }
    }
    if (kept.isEmpty()) {
      arrivals.clear();
    } else if (next != (counter == null ? 0 : counter)) {
      arrivals.update(next);
    }
  }

  private Comparator<Copy> order() {
    List<Comparator<Object>> items = new ArrayList<>();
    for (int i = 0; i < descending.length; i++) {
      items.add(Values.order(descending[i], nullsFirst[i]));
    }
    return (a, b) -> {
      for (int i = 0; i < items.size(); i++) {
        int c = items.get(i).compare(a.sort().get(i), b.sort().get(i));
        if (c != 0) {
          return c;
        }
      }
      int c = Long.compare(a.arrival(), b.arrival());
      return newestFirst ? -c : c;
    };
  }

  /** {row or (row, rank): count} of the rows within the rank range; {@code within}
   * counts, per row, its copies ranked up to the range's end. */
  private Map<Object, Long> ranked(Map<Row, Kept> kept, Map<Row, Integer> within) {
    List<Copy> copies = new ArrayList<>();
    for (Map.Entry<Row, Kept> e : kept.entrySet()) {
      for (long arrival : e.getValue().arrivals) {
        copies.add(new Copy(e.getKey(), e.getValue().sort, arrival));
      }
    }
    copies.sort(order());
    Map<Object, Long> out = new HashMap<>();
    long position = 0, rank = 0, dense = 0;
    Row previous = null;
    for (Copy copy : copies) {
      position++;
      if (function == ROW_NUMBER) {
        rank = position;
      } else if (previous == null || !copy.sort().equals(previous)) {
        dense++;
        rank = function == RANK ? position : dense;
      }
      previous = copy.sort();
      if (rank > upper) {
        return out;
      }
      if (within != null) {
        within.merge(copy.row(), 1, Integer::sum);
      }
      if (rank >= lower) {
        Object entry = showRank ? new Tuple2<>(copy.row(), rank) : copy.row();
        out.merge(entry, 1L, Long::sum);
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
