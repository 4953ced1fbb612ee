package streamsql.engine;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * A partition's signed rows with equal values netted (see {@link Engine#combine}). Rows
 * whose signs cancel out disappear; a full table passes on its oldest half, which is
 * still exact: downstream adds the partial sums.
 */
final class Combiner implements Iterator<Row> {
  private final Iterator<Row> rows;
  private final int signAt, width, limit;
  private final Map<List<Object>, long[]> sums = new LinkedHashMap<>();
  private final ArrayDeque<Row> ready = new ArrayDeque<>();
  private boolean drained;

  Combiner(Iterator<Row> rows, int signAt, int width, int limit) {
    this.rows = rows;
    this.signAt = signAt;
    this.width = width;
    this.limit = limit;
  }

  @Override
  public boolean hasNext() {
    while (ready.isEmpty() && !drained) {
      fill();
    }
    return !ready.isEmpty();
  }

  @Override
  public Row next() {
    if (!hasNext()) {
      throw new java.util.NoSuchElementException();
    }
    return ready.poll();
  }

  private void fill() {
    while (rows.hasNext()) {
      Row r = rows.next();
      Object[] values = new Object[width];
      for (int i = 0; i < width; i++) {
        values[i] = i == signAt ? null : r.get(i);
      }
      sums.computeIfAbsent(Arrays.asList(values), k -> new long[1])[0] += Operator.sign(r, signAt);
      if (sums.size() >= limit) {
        pass(limit / 2);
        return;
      }
    }
    pass(sums.size());
    drained = true;
  }

  /** Pass on the oldest {@code count} sums. */
  private void pass(int count) {
    Iterator<Map.Entry<List<Object>, long[]>> it = sums.entrySet().iterator();
    for (int i = 0; i < count && it.hasNext(); i++) {
      Map.Entry<List<Object>, long[]> e = it.next();
      it.remove();
      long n = e.getValue()[0];
      if (n == 0) {
        continue;
      }
      Object[] values = e.getKey().toArray();
      values[signAt] = (int) n;
      ready.add(RowFactory.create(values));
    }
  }
}
