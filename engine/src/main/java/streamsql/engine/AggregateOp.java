package streamsql.engine;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.ValueState;

/**
 * GROUP BY with retractable aggregates (Flink's GroupAggFunction).
 *
 * <p>Input per group: {@code __sign} and one argument column per aggregate call (NULL
 * values are ignored by every function but COUNT(*)). Output: {@code __sign}, the group
 * key's columns, one result column per call (in Flink's result type), and {@code __net}.
 * Each change of a group retracts the group's old result row and inserts the new one; a
 * group whose row count drops to zero is deleted, except the single group of a global
 * aggregate (no GROUP BY), which stays and shows its empty result.
 *
 * <p>State per group: its row count and every call's accumulator in one value; calls that
 * count values (DISTINCT, MIN/MAX of an updating input) keep a map state of their own.
 */
final class AggregateOp extends Operator implements streamsql.engine.grouping.NetsEqualRows {
  private final Aggs.Fn[] fns;
  private final int signAt;
  private final int[] argAt;
  private final boolean global;
  // Some call depends on the order of the changes (LISTAGG, FIRST_VALUE, LAST_VALUE): the
  // batch's rows are applied one by one, in arrival order (append-only input, read in
  // order) or by the positions of a normalized changelog (majorAt/minorAt, else -1).
  private final boolean ordered;
  private final int majorAt, minorAt;
  private transient ValueState<byte[]> accumulators;

  AggregateOp(Aggs.Fn[] fns, int signAt, int[] argAt, boolean global, long ttlMillis, int majorAt, int minorAt) {
    super(ttlMillis);
    this.fns = fns;
    this.signAt = signAt;
    this.argAt = argAt;
    this.global = global;
    this.ordered = Arrays.stream(fns).anyMatch(Aggs.Fn::dependsOnOrder);
    this.majorAt = majorAt;
    this.minorAt = minorAt;
  }

  /** Equal rows may be netted before the shuffle unless a call reads them in order. */
  @Override
  public int netSignAt() {
    return ordered ? -1 : signAt;
  }

  @Override
  void open() {
    accumulators = StateVars.value(getHandle(), "acc", Encoders.BINARY(), ttl());
    for (int i = 0; i < fns.length; i++) {
      fns[i].open(getHandle(), "agg" + i, ttl());
    }
  }

  @Override
  void forget() {
    accumulators.clear();
    for (Aggs.Fn fn : fns) {
      fn.clear();
    }
  }

  @Override
  void process(Row key, Iterator<Row> rows, List<Row> out) {
    byte[] stored = accumulators.get();
    long count;
    Aggs.Acc[] accs = new Aggs.Acc[fns.length];
    try {
      if (stored == null) {
        count = 0;
        for (int i = 0; i < fns.length; i++) {
          accs[i] = fns[i].create();
        }
      } else {
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(stored));
        count = in.readLong();
        for (int i = 0; i < fns.length; i++) {
          accs[i] = fns[i].read(in);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    boolean wasAlive = stored != null && (count > 0 || global);
    Object[] before = wasAlive ? results(accs) : null;
    for (Map.Entry<List<Object>, long[]> e : changes(rows)) {
      long n = e.getValue()[0];
      if (n == 0) {
        continue;
      }
      count += n;
      for (int i = 0; i < accs.length; i++) {
        accs[i].add(e.getKey().get(i), n);
      }
      if (count == 0) {
        // The group's last row is gone: Flink clears its accumulators, and a row that comes
        // back starts from new ones (a user's function whose retract is not exact shows it).
        for (int i = 0; i < accs.length; i++) {
          if (fns[i].startsAfresh()) {
            accs[i] = fns[i].create();
          }
        }
      }
    }
    if (count < 0) {
      throw new IllegalStateException("group " + key + " received more retractions than rows: "
          + "the input is not a consistent changelog");
    }
    boolean alive = count > 0 || global;
    Object[] after = alive ? results(accs) : null;
    if (!Arrays.equals(before, after)) {
      if (before != null) {
        out.add(output(-1, key, before, after != null));
      }
      if (after != null) {
        out.add(output(1, key, after, true));
      }
    }
    if (alive) {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream(64);
      DataOutputStream data = new DataOutputStream(bytes);
      try {
        data.writeLong(count);
        for (Aggs.Acc acc : accs) {
          acc.write(data);
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      accumulators.update(bytes.toByteArray());
    } else {
      accumulators.clear();
      for (Aggs.Fn fn : fns) {
        fn.clear();
      }
    }
  }

  /**
   * The batch's changes as (argument tuple, count). Netted per tuple: changes inside a
   * batch arrive in no particular order (a retraction may come before the row it
   * retracts), and each accumulator then sees every distinct tuple once. Order-dependent
   * calls get every change, in arrival order or by position (at one position a retraction
   * before an insertion, -U before +U).
   */
  private Iterable<Map.Entry<List<Object>, long[]>> changes(Iterator<Row> rows) {
    if (!ordered) {
      Map<List<Object>, long[]> net = new LinkedHashMap<>();
      rows.forEachRemaining(r -> net.computeIfAbsent(args(r), k -> new long[1])[0] += sign(r, signAt));
      // Retractions first, as Flink receives -U before +U: JSON_OBJECTAGG fails on a key it
      // still holds, so a key's new value must come after its old one is gone.
      List<Map.Entry<List<Object>, long[]>> sorted = new ArrayList<>(net.entrySet());
      sorted.sort((a, b) -> Boolean.compare(a.getValue()[0] >= 0, b.getValue()[0] >= 0));
      return sorted;
    }
    List<Row> inOrder = new ArrayList<>();
    rows.forEachRemaining(inOrder::add);
    if (majorAt >= 0) {
      inOrder.sort((a, b) -> {
        int c = NormalizeOp.comparePositions(a, b, majorAt, minorAt);
        return c != 0 ? c : Long.compare(sign(a, signAt), sign(b, signAt));
      });
    }
    List<Map.Entry<List<Object>, long[]>> out = new ArrayList<>(inOrder.size());
    for (Row r : inOrder) {
      out.add(Map.entry(args(r), new long[] {sign(r, signAt)}));
    }
    return out;
  }

  private List<Object> args(Row r) {
    Object[] args = new Object[argAt.length];
    for (int i = 0; i < args.length; i++) {
      args[i] = argAt[i] < 0 ? Boolean.TRUE : r.get(argAt[i]);
    }
    return Arrays.asList(args);
  }

  private Object[] results(Aggs.Acc[] accs) {
    Object[] out = new Object[accs.length];
    for (int i = 0; i < accs.length; i++) {
      out[i] = accs[i].result();
    }
    return out;
  }

  private Row output(int sign, Row key, Object[] results, boolean keyAlsoInserts) {
    int keys = global ? 0 : key.length();
    Object[] v = new Object[2 + keys + results.length];
    v[0] = sign;
    for (int i = 0; i < keys; i++) {
      v[1 + i] = key.get(i);
    }
    System.arraycopy(results, 0, v, 1 + keys, results.length);
    v[v.length - 1] = net(sign, keyAlsoInserts);
    return row(v);
  }
}
