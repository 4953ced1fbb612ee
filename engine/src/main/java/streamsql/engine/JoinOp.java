package streamsql.engine;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.ListState;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.StructType;
import scala.Tuple2;

/**
 * Regular joins of changelogs on one key: two inputs (INNER, LEFT, RIGHT or FULL), or
 * more inputs joined on the same key (each INNER or LEFT to the ones before it), in one
 * operator — Flink's streaming join, where a row arriving on one side joins every row
 * the other sides hold under its key, and an outer join's padded row is retracted when
 * its first match arrives.
 *
 * <p>Per key the join is a product of the sides' multisets, with an outer side that is
 * empty standing in as one NULL row: {@code J = f0(S0) × f1(S1) × …}. The product is
 * linear in each factor, so the change a batch makes is {@code Σi f0(S0') … fi-1(Si-1')
 * × Δfi × fi+1(Si+1) …}: a row arriving on one side costs the rows it matches, not the
 * size of the key's state (the correctness argument of {@link Operator} holds, computed
 * incrementally). A FULL join's product would also pair the two NULL stand-ins; that
 * combination is dropped.
 *
 * <p>Input: the key, {@code __side}, {@code __sign}, and for sides that are upsert tables
 * keyed by the join key ("fused" sides: normalized here instead of by a separate
 * operator) {@code __kind} and the source position; then every side's columns. Output:
 * {@code __sign}, every side's columns (NULL for a padded side), {@code __net} (per key).
 * State per key: each side's rows with their counts (a fused side: its one row).
 */
final class JoinOp extends Operator
    implements streamsql.engine.grouping.FirstAndLatest, streamsql.engine.grouping.NetsEqualRows {
  private final StructType[] schemas;
  private final int[][] rowAt;
  private final boolean[] padded;   // side i stands in as one NULL row while it is empty
  private final boolean[] upsert;   // side i is normalized here
  private final boolean[] unique;   // side i has at most one row per key: kept as one small list
  private final boolean[] passesNullKey;  // side i's rows that cannot match are emitted padded
  private final int sideAt, signAt, kindAt, majorAt, minorAt;
  // Per side: ValueState<Row> (fused upsert side), ListState<Row> of (row, count) entries
  // (a side unique on the join key: one read per key), or MapState<Row, Long> (a side
  // with any number of rows per key: it grows without rewriting what it holds).
  private transient Object[] states;

  /** The join a spec describes, over input rows of {@code input}'s schema. */
  JoinOp(streamsql.engine.spec.Join spec, StructType input) {
    super(spec.stateTtlMs());
    int n = spec.sides().size();
    schemas = new StructType[n];
    rowAt = new int[n][];
    padded = new boolean[n];
    upsert = new boolean[n];
    unique = new boolean[n];
    passesNullKey = new boolean[n];
    for (int i = 0; i < n; i++) {
      streamsql.engine.spec.JoinSide side = spec.sides().get(i);
      schemas[i] = Schemas.select(input, side.columns());
      rowAt[i] = Schemas.indices(input, side.columns());
      padded[i] = side.padded();
      upsert[i] = side.upsert();
      unique[i] = side.unique();
      passesNullKey[i] = side.passesNullKey();
    }
    sideAt = input.fieldIndex(Columns.SIDE);
    signAt = input.fieldIndex(Columns.SIGN);
    kindAt = input.fieldIndex(Columns.UPSERT_KIND);
    majorAt = input.fieldIndex(Columns.UPSERT_MAJOR);
    minorAt = input.fieldIndex(Columns.UPSERT_MINOR);
  }

  /**
   * Rows reduced before the shuffle: when every side is an upsert table normalized here,
   * the join reads of each side's rows per key only the latest (so each side's earliest
   * and latest may be all it gets); when none is, it reads each side as a multiset (a row
   * of sign n as n copies, summed whatever the order), so equal rows may be netted. Both
   * give the same rows to the product, so the same change. A mix of the two gets every row.
   */
  @Override
  public int majorAt() {
    return upsertSides() == upsert.length ? majorAt : -1;
  }

  @Override
  public int minorAt() {
    return upsertSides() == upsert.length ? minorAt : -1;
  }

  @Override
  public int[] alsoPer() {
    return new int[] {sideAt};
  }

  @Override
  public int[] netPer() {
    return new int[] {sideAt};
  }

  @Override
  public int netSignAt() {
    return upsertSides() == 0 ? signAt : -1;
  }

  private int upsertSides() {
    int n = 0;
    for (boolean u : upsert) {
      n += u ? 1 : 0;
    }
    return n;
  }

  @Override
  void open() {
    states = new Object[schemas.length];
    for (int i = 0; i < schemas.length; i++) {
      if (upsert[i]) {
        states[i] = StateVars.value(getHandle(), "side" + i, Encoders.row(schemas[i]), ttl());
      } else if (unique[i]) {
        StructType entry = new StructType().add("row", schemas[i]).add("n", org.apache.spark.sql.types.DataTypes.LongType);
        states[i] = StateVars.list(getHandle(), "side" + i, Encoders.row(entry), ttl());
      } else {
        states[i] = StateVars.map(getHandle(), "side" + i, Encoders.row(schemas[i]), Encoders.LONG(), ttl());
      }
    }
  }

  @SuppressWarnings("unchecked")
  private MapState<Row, Long> multiset(int side) {
    return (MapState<Row, Long>) states[side];
  }

  @SuppressWarnings("unchecked")
  private ListState<Row> entries(int side) {
    return (ListState<Row>) states[side];
  }

  @SuppressWarnings("unchecked")
  private ValueState<Row> single(int side) {
    return (ValueState<Row>) states[side];
  }

  @Override
  void forget() {
    for (int i = 0; i < states.length; i++) {
      if (upsert[i]) {
        single(i).clear();
      } else if (unique[i]) {
        entries(i).clear();
      } else {
        multiset(i).clear();
      }
    }
  }

  /**
   * A key with a NULL part never matches (the planner also gives a row whose one-sided ON
   * condition fails a NULL key): no state, each row of a side that passes such rows is
   * emitted at once, padded with NULLs, with its own sign. They come through the operator
   * rather than around it so that the query reads its source once.
   */
  @Override
  boolean stateless(Row key) {
    return key.anyNull();
  }

  @Override
  void process(Row key, Iterator<Row> rows, List<Row> out) {
    if (stateless(key)) {
      passThrough(rows, out);
      return;
    }
    int n = schemas.length;
    List<Map<Row, Long>> deltas = new ArrayList<>(n);
    Row[] latest = new Row[n];
    for (int i = 0; i < n; i++) {
      deltas.add(new LinkedHashMap<>());
    }
    while (rows.hasNext()) {
      Row r = rows.next();
      int side = sign(r, sideAt);
      if (upsert[side]) {
        if (latest[side] == null || NormalizeOp.later(r, latest[side], majorAt, minorAt)) {
          latest[side] = r;
        }
      } else {
        add(deltas.get(side), row(values(r, rowAt[side])), sign(r, signAt));
      }
    }
    // Each side before the batch, and the batch's change to it: a fused upsert side's
    // change is its old row against its latest one, known only once its row is read.
    List<Map<Row, Long>> before = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      Map<Row, Long> rowsOfSide = new LinkedHashMap<>();
      if (upsert[i]) {
        Row old = single(i).get();
        if (old != null) {
          rowsOfSide.put(old, 1L);
        }
        if (latest[i] != null) {
          Row now = "D".equals(latest[i].getString(kindAt)) ? null : row(values(latest[i], rowAt[i]));
          if (old != null && !old.equals(now)) {
            add(deltas.get(i), old, -1);
          }
          if (now != null && !now.equals(old)) {
            add(deltas.get(i), now, 1);
          }
        }
      }
      before.add(rowsOfSide);
    }
    for (int i = 0; i < n; i++) {
      if (upsert[i] || (deltas.get(i).isEmpty() && !needsRows(i, deltas))) {
        continue;
      }
      if (unique[i]) {
        scala.collection.Iterator<Row> it = entries(i).get();
        while (it.hasNext()) {
          Row entry = it.next();
          before.get(i).put(entry.getStruct(0), entry.getLong(1));
        }
        continue;
      }
      scala.collection.Iterator<Tuple2<Row, Long>> it = multiset(i).iterator();
      while (it.hasNext()) {
        Tuple2<Row, Long> entry = it.next();
        before.get(i).put(entry._1(), entry._2());
      }
    }
    List<Map<Row, Long>> after = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      Map<Row, Long> next = new LinkedHashMap<>(before.get(i));
      for (Map.Entry<Row, Long> d : deltas.get(i).entrySet()) {
        add(next, d.getKey(), d.getValue());
      }
      after.add(next);
    }
    // Σi f(S0') … f(Si-1') × Δf(Si) × f(Si+1) … f(Sn-1)
    Map<List<Row>, Long> change = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      if (deltas.get(i).isEmpty()) {
        continue;
      }
      Map<Row, Long> df = new LinkedHashMap<>(factor(i, after.get(i)));
      for (Map.Entry<Row, Long> e : factor(i, before.get(i)).entrySet()) {
        add(df, e.getKey(), -e.getValue());
      }
      if (df.isEmpty()) {
        continue;
      }
      List<Map<Row, Long>> factors = new ArrayList<>(n);
      for (int j = 0; j < n; j++) {
        factors.add(j < i ? factor(j, after.get(j)) : j == i ? df : factor(j, before.get(j)));
      }
      product(factors, 0, new Row[n], 1, change);
    }
    emit(change, out);
    // The new state.
    for (int i = 0; i < n; i++) {
      if (upsert[i]) {
        if (latest[i] != null) {
          Row now = after.get(i).isEmpty() ? null : after.get(i).keySet().iterator().next();
          if (now == null) {
            single(i).clear();
          } else {
            single(i).update(now);
          }
        }
        continue;
      }
      if (unique[i]) {
        if (!deltas.get(i).isEmpty()) {
          Row[] kept = new Row[after.get(i).size()];
          int k = 0;
          for (Map.Entry<Row, Long> e : after.get(i).entrySet()) {
            kept[k++] = row(new Object[] {e.getKey(), e.getValue()});
          }
          if (kept.length == 0) {
            entries(i).clear();
          } else {
            entries(i).put(kept);
          }
        }
        continue;
      }
      for (Row r : deltas.get(i).keySet()) {
        Long count = after.get(i).get(r);
        if (count == null) {
          multiset(i).removeKey(r);
        } else if (count < 0) {
          throw new IllegalStateException("join side " + i + " received more retractions than rows of " + r
              + ": the input is not a consistent changelog");
        } else {
          multiset(i).updateValue(r, count);
        }
      }
    }
  }

  /** Does the change of some other side need side i's rows (its factor in a product)? */
  private static boolean needsRows(int side, List<Map<Row, Long>> deltas) {
    for (int j = 0; j < deltas.size(); j++) {
      if (j != side && !deltas.get(j).isEmpty()) {
        return true;
      }
    }
    return false;
  }

  /** A side's factor in the product: its rows, or one NULL row for an empty outer side. */
  private Map<Row, Long> factor(int side, Map<Row, Long> rowsOfSide) {
    if (rowsOfSide.isEmpty() && padded[side]) {
      Map<Row, Long> pad = new HashMap<>(1);
      pad.put(null, 1L);
      return pad;
    }
    return rowsOfSide;
  }

  private static void product(List<Map<Row, Long>> factors, int at, Row[] combo, long weight,
                              Map<List<Row>, Long> out) {
    if (at == factors.size()) {
      for (Row r : combo) {
        if (r != null) {
          add(out, Arrays.asList(combo.clone()), weight);
          return;
        }
      }
      return; // every side NULL: a FULL join pads neither side
    }
    for (Map.Entry<Row, Long> e : factors.get(at).entrySet()) {
      combo[at] = e.getKey();
      product(factors, at + 1, combo, weight * e.getValue(), out);
    }
  }

  private int width() {
    int width = 2;  // the sign, every side's columns, the net
    for (StructType s : schemas) {
      width += s.length();
    }
    return width;
  }

  private void passThrough(Iterator<Row> rows, List<Row> out) {
    int width = width();
    int[] firstColumn = new int[schemas.length];  // of each side in the output, after the sign
    for (int i = 0, at = 1; i < schemas.length; at += schemas[i].length(), i++) {
      firstColumn[i] = at;
    }
    while (rows.hasNext()) {
      Row r = rows.next();
      int side = sign(r, sideAt);
      if (!passesNullKey[side]) {
        continue;
      }
      Object[] v = new Object[width];
      v[0] = sign(r, signAt);
      int at = firstColumn[side];
      for (int c : rowAt[side]) {
        v[at++] = r.get(c);
      }
      out.add(row(v));  // other sides and the net NULL
    }
  }

  private void emit(Map<List<Row>, Long> change, List<Row> out) {
    boolean inserts = false;
    for (long w : change.values()) {
      inserts |= w > 0;
    }
    int width = width();
    for (int pass = 0; pass < 2; pass++) { // retractions first
      for (Map.Entry<List<Row>, Long> e : change.entrySet()) {
        long w = e.getValue();
        if ((pass == 0) != (w < 0)) {
          continue;
        }
        Object[] v = new Object[width];
        v[0] = (int) w;
        int at = 1;
        for (int i = 0; i < schemas.length; i++) {
          Row r = e.getKey().get(i);
          for (int c = 0; c < schemas[i].length(); c++) {
            v[at++] = r == null ? null : r.get(c);
          }
        }
        v[at] = net((int) w, inserts);
        out.add(row(v));
      }
    }
  }

  static <K> void add(Map<K, Long> multiset, K row, long n) {
    if (n == 0) {
      return;
    }
    Long had = multiset.get(row);
    long now = (had == null ? 0 : had) + n;
    if (now == 0) {
      multiset.remove(row);
    } else {
      multiset.put(row, now);
    }
  }
}
