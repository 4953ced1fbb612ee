package streamsql.engine;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.KeyValueGroupedDataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import streamsql.engine.spec.AggregateCall;
import streamsql.engine.spec.Aggregate;
import streamsql.engine.spec.ConnectionProperty;
import streamsql.engine.spec.CurrentWatermark;
import streamsql.engine.spec.Join;
import streamsql.engine.spec.LookupJoin;
import streamsql.engine.spec.Materialize;
import streamsql.engine.spec.NetChanges;
import streamsql.engine.spec.Normalize;
import streamsql.engine.spec.NumberRows;
import streamsql.engine.spec.Over;
import streamsql.engine.spec.Rank;
import streamsql.engine.spec.SessionRows;
import streamsql.engine.spec.SortKey;
import streamsql.engine.spec.Specs;
import streamsql.engine.spec.TemporalJoin;
import streamsql.engine.spec.TemporalSort;
import streamsql.engine.spec.WindowJoin;
import streamsql.engine.spec.WindowRank;
import streamsql.engine.udf.FlinkAggregate;

/**
 * The operators as the planner calls them (through py4j, job/changelog/jvm.py): each
 * takes a streaming Dataset and the operator's specification as JSON (one record of
 * {@link streamsql.engine.spec}, read by {@link Specs}), and returns the operator's output
 * Dataset. Columns are named; the specification names the ones the operator reads, and
 * {@link Columns} the ones the engine itself adds. Every operator groups by a key (the
 * spec's {@code keys} columns) and keeps its state per key in Spark's state store, with
 * {@code stateTtlMs} ({@code table.exec.state.ttl}) when it is set.
 *
 * <p>Each operator is built from its spec and input schema by a package-level
 * {@code …Op} method, which the engine's Java tests use too.
 */
public final class Engine {
  private Engine() {}

  static final String SIGN = Columns.SIGN;
  static final String NET = Columns.NET;

  /**
   * Rows grouped by the named columns (no columns: one group). Grouped by the columns
   * themselves rather than by a key function: a function needs every row turned into a
   * Row object and its key back into Spark's format before the shuffle (an extra step,
   * AppendColumns, that converts every string of every row).
   */
  static KeyValueGroupedDataset<Row, Row> grouped(Dataset<Row> input, List<String> keys) {
    streamsql.engine.grouping.KeyGrouping.install(input.sparkSession());
    StructType schema = input.schema();
    if (keys.isEmpty()) {
      StructType one = new StructType().add("__group", DataTypes.IntegerType, false);
      return input.groupBy(functions.lit(0).as("__group")).as(Encoders.row(one), Encoders.row(schema));
    }
    Column[] columns = new Column[keys.size()];
    for (int i = 0; i < columns.length; i++) {
      columns[i] = input.col("`" + keys.get(i).replace("`", "``") + "`");
    }
    return input.groupBy(columns).as(Encoders.row(Schemas.select(schema, keys)), Encoders.row(schema));
  }

  private static Dataset<Row> run(Dataset<Row> input, List<String> keys, Operator op, StructType output) {
    return grouped(input, keys).transformWithState(op, TimeMode.None(), OutputMode.Append(), Encoders.row(output));
  }

  private static StructType signed(StructType... parts) {
    return Schemas.concat(new StructType().add(SIGN, DataTypes.IntegerType, false), Schemas.concat(parts));
  }

  private static StructType net() {
    return new StructType().add(NET, DataTypes.StringType);
  }

  /**
   * An upsert stream (with the upsert columns of {@link Columns}) → signed changes, with
   * each change's position in its source.
   */
  public static Dataset<Row> normalize(Dataset<Row> input, String json) {
    Normalize s = Specs.read(json, Normalize.class);
    StructType rowSchema = Schemas.select(input.schema(), s.row());
    return run(input, s.keys(), normalizeOp(s, input.schema()), Schemas.concat(signed(rowSchema), new StructType()
        .add(POSITION_MAJOR, DataTypes.StringType).add(POSITION_MINOR, DataTypes.LongType)));
  }

  static NormalizeOp normalizeOp(Normalize s, StructType schema) {
    return new NormalizeOp(Schemas.select(schema, s.row()), Schemas.indices(schema, s.row()),
        schema.fieldIndex(Columns.UPSERT_KIND), schema.fieldIndex(Columns.UPSERT_MAJOR),
        schema.fieldIndex(Columns.UPSERT_MINOR), s.stateTtlMs());
  }

  /** The position columns of a normalized change (see {@link NormalizeOp}). */
  static final String POSITION_MAJOR = Columns.POSITION_MAJOR, POSITION_MINOR = Columns.POSITION_MINOR;

  /**
   * GROUP BY: (__sign, the key columns, one column per call, __net). No keys: one global
   * group. The input has __sign, and the positions when the spec is ordered.
   */
  public static Dataset<Row> aggregate(Dataset<Row> input, String json) {
    Aggregate s = Specs.read(json, Aggregate.class);
    StructType schema = input.schema();
    StructType results = new StructType();
    for (AggregateCall call : s.calls()) {
      results = results.add(call.column(), call.result(), true);
    }
    StructType keys = Schemas.select(schema, s.keys());
    return run(input, s.keys(), aggregateOp(s, schema), Schemas.concat(signed(keys, results), net()));
  }

  static AggregateOp aggregateOp(Aggregate s, StructType schema) {
    int[] argAt = new int[s.calls().size()];
    Aggs.Fn[] fns = new Aggs.Fn[argAt.length];
    for (int i = 0; i < fns.length; i++) {
      AggregateCall call = s.calls().get(i);
      boolean hasArg = call.argument() != null;
      argAt[i] = hasArg ? schema.fieldIndex(call.argument()) : -1;
      DataType argType = hasArg ? schema.apply(call.argument()).dataType() : null;
      fns[i] = call.function().equals("user")
          ? Aggs.user(new FlinkAggregate(call.className(), call.accumulate(), call.retract(), (StructType) argType,
                                         call.result()), argType, call.result(), call.distinct(), s.ordered())
          : Aggs.of(call.function(), argType, call.result(), call.distinct(), s.appendOnly(),
                    call.separatorOrDefault());
    }
    boolean positioned = s.ordered() && Arrays.asList(schema.fieldNames()).contains(POSITION_MAJOR);
    return new AggregateOp(fns, schema.fieldIndex(SIGN), argAt, s.keys().isEmpty(), s.stateTtlMs(),
        positioned ? schema.fieldIndex(POSITION_MAJOR) : -1, positioned ? schema.fieldIndex(POSITION_MINOR) : -1);
  }

  /**
   * A regular join of two or more inputs on one key, unioned into one stream with
   * {@link Columns#SIDE}: (__sign, every side's columns, __net).
   */
  public static Dataset<Row> join(Dataset<Row> input, String json) {
    Join s = Specs.read(json, Join.class);
    StructType[] schemas = new StructType[s.sides().size()];
    for (int i = 0; i < schemas.length; i++) {
      schemas[i] = Schemas.select(input.schema(), s.sides().get(i).columns());
    }
    return run(input, s.keys(), new JoinOp(s, input.schema()), Schemas.concat(signed(schemas), net()));
  }

  /** The latest row per sink key. Output: row columns, __op. */
  public static Dataset<Row> materialize(Dataset<Row> input, String json) {
    Materialize s = Specs.read(json, Materialize.class);
    StructType rowSchema = Schemas.select(input.schema(), s.row());
    return run(input, s.keys(), materializeOp(s, input.schema()),
        Schemas.concat(rowSchema, new StructType().add(Columns.OP, DataTypes.StringType)));
  }

  static MaterializeOp materializeOp(Materialize s, StructType schema) {
    return new MaterializeOp(Schemas.select(schema, s.row()), Schemas.indices(schema, s.row()),
        schema.fieldIndex(SIGN), s.stateTtlMs());
  }

  /** A batch's changes netted per sink key (no state). Output: row, __op. */
  public static Dataset<Row> netChanges(Dataset<Row> input, String json) {
    NetChanges s = Specs.read(json, NetChanges.class);
    StructType rowSchema = Schemas.select(input.schema(), s.row());
    return run(input, s.keys(), netOp(s, input.schema()),
        Schemas.concat(rowSchema, new StructType().add(Columns.OP, DataTypes.StringType)));
  }

  static NetOp netOp(NetChanges s, StructType schema) {
    return new NetOp(Schemas.indices(schema, s.row()), schema.fieldIndex(SIGN));
  }

  /** Top-N. Output: __sign, row columns, __rnk, __net. */
  public static Dataset<Row> rank(Dataset<Row> input, String json) {
    Rank s = Specs.read(json, Rank.class);
    StructType out = Schemas.concat(signed(Schemas.select(input.schema(), s.row())),
        new StructType().add(Columns.RANK, DataTypes.LongType), net());
    return run(input, s.keys(), rankOp(s, input.schema()), out);
  }

  static RankOp rankOp(Rank s, StructType schema) {
    List<String> sortColumns = new ArrayList<>();
    boolean[] descending = new boolean[s.sort().size()];
    boolean[] nullsFirst = new boolean[descending.length];
    for (int i = 0; i < descending.length; i++) {
      SortKey key = s.sort().get(i);
      sortColumns.add(key.column());
      descending[i] = key.descending();
      nullsFirst[i] = key.nullsFirst();
    }
    int function;
    switch (s.function()) {
      case "row_number": function = RankOp.ROW_NUMBER; break;
      case "rank": function = RankOp.RANK; break;
      case "dense_rank": function = RankOp.DENSE_RANK; break;
      default: throw new IllegalArgumentException("unknown ranking function " + s.function());
    }
    return new RankOp(Schemas.select(schema, s.row()), Schemas.indices(schema, s.row()),
        Schemas.select(schema, sortColumns), Schemas.indices(schema, sortColumns), descending, nullsFirst,
        schema.fieldIndex(SIGN), function, s.lower(), s.upper(), s.appendOnly(), s.showRank(), s.newestFirst(),
        s.stateTtlMs());
  }

  /**
   * The rows with one more column: each row's index within its partition (0, 1, …).
   * Streaming Spark has no row numbers (monotonically_increasing_id is refused), but a
   * file source reads each split of a file in order within one partition: together with
   * the split's start this gives every record its position in its file, without reading
   * the file whole.
   */
  public static Dataset<Row> numberRows(Dataset<Row> input, String json) {
    String column = Specs.read(json, NumberRows.class).column();
    StructType schema = input.schema().add(column, DataTypes.LongType, false);
    int width = input.schema().length();
    return input.mapPartitions((org.apache.spark.api.java.function.MapPartitionsFunction<Row, Row>) rows ->
        new java.util.Iterator<Row>() {
          private long next = 0;

          @Override
          public boolean hasNext() {
            return rows.hasNext();
          }

          @Override
          public Row next() {
            Row r = rows.next();
            Object[] v = new Object[width + 1];
            for (int i = 0; i < width; i++) {
              v[i] = r.get(i);
            }
            v[width] = next++;
            return RowFactory.create(v);
          }
        }, Encoders.row(schema));
  }

  /** The names of a schema's fields (for tests and --explain). */
  static List<String> names(StructType schema) {
    List<String> out = new ArrayList<>();
    for (StructField f : schema.fields()) {
      out.add(f.name());
    }
    return out;
  }

  // ------------------------------------------------------------------ event-time operators

  /**
   * CURRENT_WATERMARK: all rows under one key (one constant column). Output: the input's
   * columns and each row's watermark.
   */
  public static Dataset<Row> currentWatermark(Dataset<Row> input, String json) {
    CurrentWatermark s = Specs.read(json, CurrentWatermark.class);
    StructType output = input.schema().add(s.column(),
        s.local() ? DataTypes.TimestampNTZType : DataTypes.TimestampType, true);
    return grouped(input, s.keys()).transformWithState(watermarkOp(s, input.schema()), TimeMode.None(),
        OutputMode.Append(), Encoders.row(output));
  }

  static WatermarkOp watermarkOp(CurrentWatermark s, StructType schema) {
    return new WatermarkOp(schema.fieldIndex(s.rowtime()), s.delayMs(), s.local());
  }

  /** An event-time operator (timers fire as the watermark passes them). */
  private static Dataset<Row> timed(Dataset<Row> input, List<String> keys, TimedOperator op, StructType output,
                                    boolean eventTime) {
    // No TTL here: Spark expires state only in processing-time mode, whose operators run
    // a batch after every batch (a --once run would never end); the event-time
    // operators' timers clean their state instead.
    TimeMode mode = eventTime ? TimeMode.EventTime() : TimeMode.None();
    return grouped(input, keys).transformWithState(op, mode, OutputMode.Append(), Encoders.row(output));
  }

  /**
   * OVER aggregation: the calls as {@link #aggregate}'s, plus LAG. Output: the row columns
   * and one column per call; append-only.
   */
  public static Dataset<Row> over(Dataset<Row> input, String json) {
    Over s = Specs.read(json, Over.class);
    StructType out = Schemas.select(input.schema(), s.row());
    for (AggregateCall call : s.calls()) {
      out = out.add(call.column(), call.result(), true);
    }
    return timed(input, s.keys(), overOp(s, input.schema()), out, s.time() != null);
  }

  static OverOp overOp(Over s, StructType schema) {
    List<AggregateCall> calls = s.calls();
    int[] argAt = new int[calls.size()];
    int[] defaultAt = new int[calls.size()];
    Aggs.Fn[] fns = new Aggs.Fn[calls.size()];
    for (int i = 0; i < fns.length; i++) {
      AggregateCall call = calls.get(i);
      boolean hasArg = call.argument() != null;
      argAt[i] = hasArg ? schema.fieldIndex(call.argument()) : -1;
      defaultAt[i] = call.lagDefault() != null ? schema.fieldIndex(call.lagDefault()) : -1;
      if (call.function().equals("lag")) {
        fns[i] = new OverOp.Lag(schema.apply(call.argument()).dataType(), (int) call.lagOffset());
      } else {
        fns[i] = Aggs.of(call.function(), hasArg ? schema.apply(call.argument()).dataType() : null, call.result(),
            call.distinct(), s.preceding() < 0, call.separatorOrDefault());
      }
    }
    return new OverOp(schema, Schemas.indices(schema, s.row()), s.time() != null ? schema.fieldIndex(s.time()) : -1,
        s.rows(), s.preceding(), fns, argAt, defaultAt, 0);
  }

  /** Event-time temporal join. Output: left and right columns; append-only. */
  public static Dataset<Row> temporalJoin(Dataset<Row> input, String json) {
    TemporalJoin s = Specs.read(json, TemporalJoin.class);
    StructType schema = input.schema();
    return timed(input, s.keys(), temporalJoinOp(s, schema),
        Schemas.concat(Schemas.select(schema, s.left()), Schemas.select(schema, s.right())), true);
  }

  static TemporalJoinOp temporalJoinOp(TemporalJoin s, StructType schema) {
    return new TemporalJoinOp(Schemas.select(schema, s.left()), Schemas.select(schema, s.right()),
        Schemas.indices(schema, s.left()), Schemas.indices(schema, s.right()), schema.fieldIndex(Columns.SIDE),
        schema.fieldIndex(s.time()), schema.fieldIndex(s.retract()), s.leftOuter(), 0);
  }

  /**
   * Lookup join against a database table (stateless; the key columns are cast to the
   * looked-up key's types). Output: the passed columns, then one column per looked-up
   * column (named r0, r1, …).
   */
  public static Dataset<Row> lookupJoin(Dataset<Row> input, String json) {
    LookupJoin s = Specs.read(json, LookupJoin.class);
    streamsql.engine.LookupJoin join = lookupJoinOp(s, input.schema());
    StructType out = Schemas.select(input.schema(), s.passed());
    StructType types = s.columnStruct();
    for (int i = 0; i < types.length(); i++) {
      out = out.add("r" + i, types.fields()[i].dataType(), true);
    }
    return input.mapPartitions((org.apache.spark.api.java.function.MapPartitionsFunction<Row, Row>) join::apply,
        Encoders.row(out));
  }

  static streamsql.engine.LookupJoin lookupJoinOp(LookupJoin s, StructType schema) {
    java.util.Properties properties = new java.util.Properties();
    for (ConnectionProperty p : s.properties()) {
      properties.setProperty(p.name(), p.value());
    }
    int[] keyColumnAt = s.keyColumns().stream().mapToInt(Integer::intValue).toArray();
    return new streamsql.engine.LookupJoin(s.url(), s.driver(), properties, s.table(), s.columns(), s.columnStruct(),
        keyColumnAt, Schemas.indices(schema, s.keys()), Schemas.indices(schema, s.passed()), s.leftOuter(),
        (int) s.chunk());
  }

  /** Window Top-N / deduplication. Output: row columns (and __rnk); append-only. */
  public static Dataset<Row> windowRank(Dataset<Row> input, String json) {
    WindowRank s = Specs.read(json, WindowRank.class);
    StructType out = Schemas.select(input.schema(), s.row());
    if (s.showRank()) {
      out = out.add(Columns.RANK, DataTypes.LongType, true);
    }
    return timed(input, s.keys(), windowRankOp(s, input.schema()), out, true);
  }

  static WindowRankOp windowRankOp(WindowRank s, StructType schema) {
    SortOrder order = SortOrder.of(s.sort(), schema);
    return new WindowRankOp(schema, Schemas.indices(schema, s.row()), order.at(), order.descending(),
        order.nullsFirst(), schema.fieldIndex(s.time()), s.lower(), s.upper(), s.showRank());
  }

  /** ORDER BY keys as the operators that sort whole rows read them: column positions and directions. */
  private record SortOrder(int[] at, boolean[] descending, boolean[] nullsFirst) {
    static SortOrder of(List<SortKey> keys, StructType schema) {
      SortOrder order = new SortOrder(new int[keys.size()], new boolean[keys.size()], new boolean[keys.size()]);
      for (int i = 0; i < keys.size(); i++) {
        order.at[i] = schema.fieldIndex(keys.get(i).column());
        order.descending[i] = keys.get(i).descending();
        order.nullsFirst[i] = keys.get(i).nullsFirst();
      }
      return order;
    }
  }

  /** Temporal sort: one group for the whole stream. Output: the row columns, sorted; append-only. */
  public static Dataset<Row> temporalSort(Dataset<Row> input, String json) {
    TemporalSort s = Specs.read(json, TemporalSort.class);
    return timed(input, List.of(), temporalSortOp(s, input.schema()), Schemas.select(input.schema(), s.row()), true);
  }

  static TemporalSortOp temporalSortOp(TemporalSort s, StructType schema) {
    SortOrder order = SortOrder.of(s.sort(), schema);
    return new TemporalSortOp(schema, Schemas.indices(schema, s.row()), schema.fieldIndex(s.time()), order.at(),
        order.descending(), order.nullsFirst());
  }

  /** Window join. Output: left and right columns; append-only. */
  public static Dataset<Row> windowJoin(Dataset<Row> input, String json) {
    WindowJoin s = Specs.read(json, WindowJoin.class);
    StructType schema = input.schema();
    return timed(input, s.keys(), windowJoinOp(s, schema),
        Schemas.concat(Schemas.select(schema, s.left()), Schemas.select(schema, s.right())), true);
  }

  static WindowJoinOp windowJoinOp(WindowJoin s, StructType schema) {
    return new WindowJoinOp(Schemas.select(schema, s.left()), Schemas.select(schema, s.right()),
        Schemas.indices(schema, s.left()), Schemas.indices(schema, s.right()), schema.fieldIndex(Columns.SIDE),
        schema.fieldIndex(s.time()), s.padLeft(), s.padRight());
  }

  /** The rows of a SESSION window table function. Output: row columns, __start, __end (ms); append-only. */
  public static Dataset<Row> sessionRows(Dataset<Row> input, String json) {
    SessionRows s = Specs.read(json, SessionRows.class);
    StructType out = Schemas.select(input.schema(), s.row()).add(Columns.SESSION_START, DataTypes.LongType, true)
        .add(Columns.SESSION_END, DataTypes.LongType, true);
    return timed(input, s.keys(), sessionOp(s, input.schema()), out, true);
  }

  static SessionOp sessionOp(SessionRows s, StructType schema) {
    return new SessionOp(schema, Schemas.indices(schema, s.row()), schema.fieldIndex(s.time()), s.gapMs());
  }
}
