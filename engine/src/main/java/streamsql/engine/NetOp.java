package streamsql.engine;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;

/**
 * A micro-batch's changes to an upsert sink, netted per sink key: the key's surviving row
 * as one '+U', or one '-D' when the key's row is gone; a key whose changes cancel out
 * writes nothing. Exact when the query's rows are unique on the sink key (the planner
 * proves it; otherwise the sink materializes instead). Keeps no state: each batch is
 * netted on its own.
 *
 * <p>Input per key: {@code __sign} and the row's columns. Output: the row's columns and
 * {@code __op}.
 */
final class NetOp extends Operator {
  private final int[] rowAt;
  private final int signAt;

  NetOp(int[] rowAt, int signAt) {
    super(0);
    this.rowAt = rowAt;
    this.signAt = signAt;
  }

  @Override
  void open() {}

  @Override
  void process(Row key, Iterator<Row> rows, List<Row> out) {
    Map<Row, long[]> net = new LinkedHashMap<>();
    while (rows.hasNext()) {
      Row r = rows.next();
      net.computeIfAbsent(row(values(r, rowAt)), k -> new long[1])[0] += sign(r, signAt);
    }
    Row up = null, gone = null;
    for (Map.Entry<Row, long[]> e : net.entrySet()) {
      if (e.getValue()[0] > 0) {
        up = e.getKey();
      } else if (e.getValue()[0] < 0) {
        gone = e.getKey();
      }
    }
    if (up != null) {
      out.add(withOp(up, "+U"));
    } else if (gone != null) {
      out.add(withOp(gone, "-D"));
    }
  }

  static Row withOp(Row r, String op) {
    Object[] v = new Object[r.length() + 1];
    for (int i = 0; i < r.length(); i++) {
      v[i] = r.get(i);
    }
    v[r.length()] = op;
    return row(v);
  }
}
