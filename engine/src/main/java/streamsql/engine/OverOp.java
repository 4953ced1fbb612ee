package streamsql.engine;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
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
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import scala.Tuple2;

/**
 * OVER aggregations: {@code agg(…) OVER (PARTITION BY … ORDER BY time ROWS|RANGE BETWEEN …
 * PRECEDING AND CURRENT ROW)} on an append-only input (Flink's RowTime/ProcTime
 * {Rows,Range}{Bounded,Unbounded}PrecedingFunction). Every input row is emitted once,
 * with the aggregates of its frame appended.
 *
 * <p>On event time a row waits in state until the watermark passes its time (rows of one
 * partition then come out in time order, arrival order among equal times); a row whose
 * time is not after the last time this partition emitted is late and dropped, as Flink
 * drops it. On processing time a row is emitted as it arrives, in arrival order.
 *
 * <p>Correctness: the partition's accumulators always hold exactly the rows of the frame
 * of the row being emitted. A ROWS frame adds the row and retracts the row that falls
 * out n rows back; a RANGE frame adds all rows of one time (peers share one result) and
 * retracts the rows older than time − interval; an unbounded frame never retracts. The
 * retractable accumulators are the group aggregation's ({@link Aggs}), so an OVER result
 * equals the GROUP BY result over the same rows.
 *
 * <p>State per partition: the rows not emitted yet and, for a bounded frame, the emitted
 * rows still inside it (map (time, arrival) → row), the accumulators (bytes), the arrival
 * counter and the last emitted time.
 */
final class OverOp extends TimedOperator {
  private final StructType inputSchema;
  private final int[] rowAt;
  private final int timeAt;          // BIGINT event time in ms; -1: processing time
  private final boolean rows;        // ROWS (else RANGE)
  private final long preceding;      // rows or ms; < 0: UNBOUNDED
  private final Aggs.Fn[] fns;
  private final int[] argAt;
  private final int[] defaultAt;     // LAG's default value column; -1 for the others
  private transient MapState<Row, Row> pending;
  private transient MapState<Row, Row> frame;
  private transient ValueState<byte[]> accumulators;
  private transient ValueState<Row> progress; // (next arrival number, last emitted time)

  private static final StructType POSITION = new StructType()
      .add("t", DataTypes.LongType, false).add("seq", DataTypes.LongType, false);
  private static final StructType PROGRESS = new StructType()
      .add("seq", DataTypes.LongType, false).add("emitted", DataTypes.LongType, false);

  OverOp(StructType inputSchema, int[] rowAt, int timeAt, boolean rows, long preceding, Aggs.Fn[] fns,
         int[] argAt, int[] defaultAt, long ttlMillis) {
    super(ttlMillis);
    this.inputSchema = inputSchema;
    this.rowAt = rowAt;
    this.timeAt = timeAt;
    this.rows = rows;
    this.preceding = preceding;
    this.fns = fns;
    this.argAt = argAt;
    this.defaultAt = defaultAt;
  }

  @Override
  void open() {
    pending = StateVars.map(getHandle(), "pending", Encoders.row(POSITION), Encoders.row(inputSchema), ttl());
    frame = StateVars.map(getHandle(), "frame", Encoders.row(POSITION), Encoders.row(inputSchema), ttl());
    accumulators = StateVars.value(getHandle(), "acc", Encoders.BINARY(), ttl());
    progress = StateVars.value(getHandle(), "progress", Encoders.row(PROGRESS), ttl());
    for (int i = 0; i < fns.length; i++) {
      fns[i].open(getHandle(), "agg" + i, ttl());
    }
  }

  private boolean eventTime() {
    return timeAt >= 0;
  }

  @Override
  void process(Row key, Iterator<Row> input, TimerValues time, List<Row> out) {
    Row p = progress.get();
    long seq = p == null ? 0 : p.getLong(0);
    long emitted = p == null ? Long.MIN_VALUE : p.getLong(1);
    if (!eventTime()) {
      // Processing time: each row is its own peer group, in arrival order.
      Aggs.Acc[] accs = readAccumulators();
      while (input.hasNext()) {
        Row r = input.next();
        long now = System.currentTimeMillis();
        List<Entry> one = new ArrayList<>(1);
        one.add(new Entry(now, seq++, r));
        emitPeers(one, accs, out);
      }
      writeAccumulators(accs);
      progress.update(RowFactory.create(seq, emitted));
      return;
    }
    long next = hold(input, timeAt, emitted, seq, pending);
    if (next != seq) {
      progress.update(RowFactory.create(next, emitted));
    }
  }

  @Override
  void fire(Row key, long at, TimerValues time, List<Row> out) {
    long watermark = time.getCurrentWatermarkInMs();
    List<Entry> ready = new ArrayList<>();
    scala.collection.Iterator<Tuple2<Row, Row>> it = pending.iterator();
    while (it.hasNext()) {
      Tuple2<Row, Row> e = it.next();
      long t = e._1().getLong(0);
      if (t <= watermark) {
        ready.add(new Entry(t, e._1().getLong(1), e._2()));
      }
    }
    if (ready.isEmpty()) {
      return; // an earlier timer of this batch emitted these rows already
    }
    ready.sort(Entry.ORDER);
    Aggs.Acc[] accs = readAccumulators();
    int from = 0;
    while (from < ready.size()) {
      int to = from;
      while (to < ready.size() && ready.get(to).time == ready.get(from).time) {
        to++;
      }
      emitPeers(ready.subList(from, to), accs, out);
      from = to;
    }
    for (Entry e : ready) {
      pending.removeKey(e.position());
    }
    writeAccumulators(accs);
    Row p = progress.get();
    progress.update(RowFactory.create(p == null ? 0L : p.getLong(0), ready.get(ready.size() - 1).time));
  }

  /** Emit rows of one time (RANGE: peers sharing one frame; ROWS: one after the other). */
  private void emitPeers(List<Entry> peers, Aggs.Acc[] accs, List<Row> out) {
    boolean bounded = preceding >= 0;
    if (!rows) {
      long t = peers.get(0).time;
      if (bounded) {
        for (Entry old : frameRows()) {
          if (old.time < t - preceding) {
            add(accs, old.row, -1);
            frame.removeKey(old.position());
          }
        }
      }
      for (Entry e : peers) {
        add(accs, e.row, 1);
        if (bounded) {
          frame.updateValue(e.position(), e.row);
        }
      }
      for (Entry e : peers) {
        out.add(output(e.row, accs));
      }
      return;
    }
    for (Entry e : peers) {
      add(accs, e.row, 1);
      if (bounded) {
        frame.updateValue(e.position(), e.row);
        List<Entry> held = frameRows();
        for (int i = 0; i < held.size() - (preceding + 1); i++) {
          add(accs, held.get(i).row, -1);
          frame.removeKey(held.get(i).position());
        }
      }
      out.add(output(e.row, accs));
    }
  }

  private List<Entry> frameRows() {
    List<Entry> held = new ArrayList<>();
    scala.collection.Iterator<Tuple2<Row, Row>> it = frame.iterator();
    while (it.hasNext()) {
      Tuple2<Row, Row> e = it.next();
      held.add(new Entry(e._1().getLong(0), e._1().getLong(1), e._2()));
    }
    held.sort(Entry.ORDER);
    return held;
  }

  private void add(Aggs.Acc[] accs, Row r, long n) {
    for (int i = 0; i < accs.length; i++) {
      accs[i].add(argAt[i] < 0 ? Boolean.TRUE : r.get(argAt[i]), n);
    }
  }

  private Row output(Row r, Aggs.Acc[] accs) {
    Object[] v = new Object[rowAt.length + accs.length];
    for (int i = 0; i < rowAt.length; i++) {
      v[i] = r.get(rowAt[i]);
    }
    for (int i = 0; i < accs.length; i++) {
      Object result = accs[i].result();
      if (defaultAt[i] >= 0 && result == null) {
        result = r.get(defaultAt[i]); // LAG's default stands in for a missing or NULL value
      }
      v[rowAt.length + i] = result;
    }
    return RowFactory.create(v);
  }

  private Aggs.Acc[] readAccumulators() {
    byte[] stored = accumulators.get();
    Aggs.Acc[] accs = new Aggs.Acc[fns.length];
    try {
      DataInputStream in = stored == null ? null : new DataInputStream(new ByteArrayInputStream(stored));
      for (int i = 0; i < fns.length; i++) {
        accs[i] = in == null ? fns[i].create() : fns[i].read(in);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return accs;
  }

  private void writeAccumulators(Aggs.Acc[] accs) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(64);
    DataOutputStream data = new DataOutputStream(bytes);
    try {
      for (Aggs.Acc acc : accs) {
        acc.write(data);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    accumulators.update(bytes.toByteArray());
  }

  /** A row in state with its time and arrival number. */
  static final class Entry {
    static final Comparator<Entry> ORDER =
        Comparator.<Entry>comparingLong(e -> e.time).thenComparingLong(e -> e.seq);
    final long time;
    final long seq;
    final Row row;

    Entry(long time, long seq, Row row) {
      this.time = time;
      this.seq = seq;
      this.row = row;
    }

    Row position() {
      return RowFactory.create(time, seq);
    }
  }

  // ------------------------------------------------------------------ LAG

  /**
   * {@code LAG(x, n[, default])}: the value n rows before the current one in the
   * partition's order. Flink computes it as an aggregate over the partition's rows so far
   * (a RANGE frame's peers all see the last peer's), and gives the default for a NULL
   * value as for a missing one. The accumulator keeps the last n + 1 values.
   */
  static final class Lag extends Aggs.Fn {
    private final int offset;

    Lag(org.apache.spark.sql.types.DataType argType, int offset) {
      super(argType, argType);
      this.offset = offset;
    }

    @Override
    Aggs.Acc create() {
      return new LagAcc(offset, new ArrayList<>());
    }

    @Override
    Aggs.Acc read(DataInputStream in) throws IOException {
      int n = in.readInt();
      List<Object> values = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        values.add(Values.read(in));
      }
      return new LagAcc(offset, values);
    }
  }

  static final class LagAcc implements Aggs.Acc {
    private final int offset;
    private final List<Object> values;

    LagAcc(int offset, List<Object> values) {
      this.offset = offset;
      this.values = values;
    }

    @Override
    public void add(Object value, long n) {
      if (n < 0) {
        throw new IllegalStateException("LAG is planned on unbounded frames only");
      }
      values.add(value);
      while (values.size() > offset + 1) {
        values.remove(0);
      }
    }

    @Override
    public Object result() {
      return values.size() > offset ? values.get(values.size() - 1 - offset) : null;
    }

    @Override
    public void write(DataOutputStream out) throws IOException {
      out.writeInt(values.size());
      for (Object v : values) {
        Values.write(out, v);
      }
    }
  }
}
