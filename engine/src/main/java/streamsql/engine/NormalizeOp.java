package streamsql.engine;

import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.StructType;

/**
 * An upsert stream becomes signed changes: the latest row per primary key wins (Flink's
 * ChangelogNormalize).
 *
 * <p>Input per key: the row's columns, its kind ('U' the key's latest row, 'D' the key
 * was deleted) and its position in the source (major text, minor number). Only the
 * latest position of a batch matters; the key's row before the batch is retracted and
 * the new one inserted. A delete of an absent key and an upsert that repeats the current
 * row emit nothing, so duplicates and tombstones for unknown keys are harmless.
 *
 * <p>Output: {@code __sign}, then the row's columns, then the change's position (major,
 * minor): a retraction at the key's first record of the batch, the new row at its latest,
 * where Flink's ChangelogNormalize emits them. Functions of the order in which changes
 * arrive (LISTAGG, FIRST_VALUE, LAST_VALUE) apply the changes in that order. State per
 * key: its current row.
 */
final class NormalizeOp extends Operator implements streamsql.engine.grouping.FirstAndLatest {
  private final StructType rowSchema;
  private final int[] rowAt;
  private final int kindAt, majorAt, minorAt;
  private transient ValueState<Row> current;

  NormalizeOp(StructType rowSchema, int[] rowAt, int kindAt, int majorAt, int minorAt, long ttlMillis) {
    super(ttlMillis);
    this.rowSchema = rowSchema;
    this.rowAt = rowAt;
    this.kindAt = kindAt;
    this.majorAt = majorAt;
    this.minorAt = minorAt;
  }

  @Override
  public int majorAt() {
    return majorAt;
  }

  @Override
  public int minorAt() {
    return minorAt;
  }

  @Override
  void open() {
    current = StateVars.value(getHandle(), "row", Encoders.row(rowSchema), ttl());
  }

  /** Is the position of {@code a} after that of {@code b}? */
  static boolean later(Row a, Row b, int majorAt, int minorAt) {
    return comparePositions(a, b, majorAt, minorAt) >= 0; // equal positions: the later arrival wins
  }

  /** The order of two records' positions in their source (major text, then minor number). */
  static int comparePositions(Row a, Row b, int majorAt, int minorAt) {
    int c = compareNullable(a.getString(majorAt), b.getString(majorAt));
    return c != 0 ? c : Long.compare(position(a, minorAt), position(b, minorAt));
  }

  private static int compareNullable(String a, String b) {
    if (a == null || b == null) {
      return a == null ? (b == null ? 0 : -1) : 1;
    }
    return a.compareTo(b);
  }

  @Override
  void forget() {
    current.clear();
  }

  @Override
  void process(Row key, Iterator<Row> rows, List<Row> out) {
    Row latest = null;
    Row first = null;
    while (rows.hasNext()) {
      Row r = rows.next();
      if (latest == null || later(r, latest, majorAt, minorAt)) {
        latest = r;
      }
      if (first == null || !later(r, first, majorAt, minorAt)) {
        first = r;
      }
    }
    if (latest == null) {
      return;
    }
    Row old = current.get();
    if ("D".equals(latest.getString(kindAt))) {
      if (old != null) {
        current.clear();
        out.add(signed(-1, old, first));
      }
      return;
    }
    Row now = row(values(latest, rowAt));
    if (old != null && old.equals(now)) {
      return;
    }
    if (old != null) {
      out.add(signed(-1, old, first));
    }
    current.update(now);
    out.add(signed(1, now, latest));
  }

  /** {@code sign}, {@code r}'s columns, and the position of the record {@code at}. */
  private Row signed(int sign, Row r, Row at) {
    Object[] v = new Object[r.length() + 3];
    v[0] = sign;
    for (int i = 0; i < r.length(); i++) {
      v[i + 1] = r.get(i);
    }
    v[r.length() + 1] = at.get(majorAt);
    v[r.length() + 2] = at.isNullAt(minorAt) ? null : ((Number) at.get(minorAt)).longValue();
    return row(v);
  }
}
