package streamsql.engine;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.ListState;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * Changes become one current row per sink primary key (Flink's SinkUpsertMaterializer).
 *
 * <p>Used when the planner cannot prove that the query's rows are unique on the sink's
 * key: every row of a key is kept with its count, most recently added last, and the sink
 * shows the last one. Input per key: {@code __sign} and the row's columns. Output: the
 * row's columns and {@code __op}: '+U' when the key's shown row changes, '-D' when the
 * key's last row is gone.
 */
final class MaterializeOp extends Operator {
  private final StructType rowSchema;
  private final int[] rowAt;
  private final int signAt;
  private transient ListState<Row> kept;

  MaterializeOp(StructType rowSchema, int[] rowAt, int signAt, long ttlMillis) {
    super(ttlMillis);
    this.rowSchema = rowSchema;
    this.rowAt = rowAt;
    this.signAt = signAt;
  }

  @Override
  void open() {
    StructType entry = new StructType().add("row", rowSchema).add("n", DataTypes.LongType);
    kept = StateVars.list(getHandle(), "rows", Encoders.row(entry), ttl());
  }

  @Override
  void forget() {
    kept.clear();
  }

  @Override
  void process(Row key, Iterator<Row> rows, List<Row> out) {
    Map<Row, Long> counts = new LinkedHashMap<>();
    scala.collection.Iterator<Row> stored = kept.get();
    while (stored.hasNext()) {
      Row entry = stored.next();
      counts.put(entry.getStruct(0), entry.getLong(1));
    }
    Row shown = last(counts);
    while (rows.hasNext()) {
      Row r = rows.next();
      Row value = row(values(r, rowAt));
      Long had = counts.remove(value); // a row added again moves to the end
      long now = (had == null ? 0 : had) + sign(r, signAt);
      if (now != 0) {
        counts.put(value, now);
      }
    }
    Row current = last(counts);
    if (current == null) {
      kept.clear();
      if (shown != null) {
        out.add(withOp(shown, "-D"));
      }
      return;
    }
    Row[] entries = new Row[counts.size()];
    int i = 0;
    for (Map.Entry<Row, Long> e : counts.entrySet()) {
      entries[i++] = row(new Object[] {e.getKey(), e.getValue()});
    }
    kept.put(entries);
    if (!current.equals(shown)) {
      out.add(withOp(current, "+U"));
    }
  }

  private static Row last(Map<Row, Long> counts) {
    Row out = null;
    for (Row r : counts.keySet()) {
      out = r;
    }
    return out;
  }

  private static Row withOp(Row r, String op) {
    return NetOp.withOp(r, op);
  }
}
