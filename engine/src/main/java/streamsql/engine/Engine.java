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
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The operators as the planner calls them (through py4j, job/changelog/jvm.py): each
 * takes a streaming Dataset and the operator's specification as JSON, and returns the
 * operator's output Dataset. Columns are named; the specification names the ones the
 * operator reads. Every operator groups by a key (the {@code keys} columns) and keeps its
 * state per key in Spark's state store, with {@code ttl_ms} ({@code table.exec.state.ttl})
 * when it is set.
 */
public final class Engine {
  private Engine() {}

  public static final String SIGN = "__sign";
  public static final String NET = "__net";

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
    return input.groupBy(columns).as(Encoders.row(Spec.select(schema, keys)), Encoders.row(schema));
  }

  private static Dataset<Row> run(Dataset<Row> input, List<String> keys, Operator op, StructType output) {
    return grouped(input, keys).transformWithState(op, TimeMode.None(), OutputMode.Append(), Encoders.row(output));
  }

  private static StructType signed(StructType... parts) {
    return Spec.concat(new StructType().add(SIGN, DataTypes.IntegerType, false), Spec.concat(parts));
  }

  private static StructType net() {
    return new StructType().add(NET, DataTypes.StringType);
  }

  /** An upsert stream → signed changes. Spec: keys, row (columns), kind, major, minor. */
  public static Dataset<Row> normalize(Dataset<Row> input, String json) {
    Spec s = Spec.parse(json);
    StructType schema = input.schema();
    StructType rowSchema = Spec.select(schema, s.strings("row"));
    NormalizeOp op = new NormalizeOp(rowSchema, Spec.indices(schema, s.strings("row")),
        schema.fieldIndex(s.text("kind")), schema.fieldIndex(s.text("major")), schema.fieldIndex(s.text("minor")),
        s.number("ttl_ms", 0));
    return run(input, s.strings("keys"), op, Spec.concat(signed(rowSchema), new StructType()
        .add(POSITION_MAJOR, DataTypes.StringType).add(POSITION_MINOR, DataTypes.LongType)));
  }

  /** The position columns of a normalized change (see {@link NormalizeOp}). */
  static final String POSITION_MAJOR = "__pos_major", POSITION_MINOR = "__pos_minor";

  /**
   * GROUP BY. Spec: keys, sign, global, append_only, aggs: [{fn, arg (column or null),
   * distinct, separator, result (Spark type JSON), name (output column)}].
   */
  public static Dataset<Row> aggregate(Dataset<Row> input, String json) {
    Spec s = Spec.parse(json);
    StructType schema = input.schema();
    List<Spec> calls = s.list("aggs");
    Aggs.Fn[] fns = new Aggs.Fn[calls.size()];
    int[] argAt = new int[calls.size()];
    StructType results = new StructType();
    for (int i = 0; i < fns.length; i++) {
      Spec call = calls.get(i);
      boolean hasArg = call.has("arg");
      argAt[i] = hasArg ? schema.fieldIndex(call.text("arg")) : -1;
      fns[i] = Aggs.of(call.text("fn"), hasArg ? schema.apply(call.text("arg")).dataType() : null, call.type("result"),
          call.flag("distinct"), s.flag("append_only"), call.text("separator", ","));
      results = results.add(call.text("name"), call.type("result"), true);
    }
    boolean global = s.flag("global");
    boolean positioned = s.flag("ordered") && Arrays.asList(schema.fieldNames()).contains(POSITION_MAJOR);
    AggregateOp op = new AggregateOp(fns, schema.fieldIndex(s.text("sign")), argAt, global, s.number("ttl_ms", 0),
        positioned ? schema.fieldIndex(POSITION_MAJOR) : -1, positioned ? schema.fieldIndex(POSITION_MINOR) : -1);
    StructType keys = global ? new StructType() : Spec.select(schema, s.strings("keys"));
    return run(input, s.strings("keys"), op, Spec.concat(signed(keys, results), net()));
  }

  /**
   * A regular join of two or more inputs on one key. Spec: keys, sides: [{columns,
   * padded, upsert, unique (at most one row per key)}], side, sign, kind, major, minor.
   */
  public static Dataset<Row> join(Dataset<Row> input, String json) {
    Spec s = Spec.parse(json);
    StructType schema = input.schema();
    List<Spec> sides = s.list("sides");
    StructType[] schemas = new StructType[sides.size()];
    int[][] rowAt = new int[sides.size()][];
    boolean[] padded = new boolean[sides.size()];
    boolean[] upsert = new boolean[sides.size()];
    boolean[] unique = new boolean[sides.size()];
    boolean[] passesNullKey = new boolean[sides.size()];
    for (int i = 0; i < schemas.length; i++) {
      List<String> columns = sides.get(i).strings("columns");
      schemas[i] = Spec.select(schema, columns);
      rowAt[i] = Spec.indices(schema, columns);
      padded[i] = sides.get(i).flag("padded");
      upsert[i] = sides.get(i).flag("upsert");
      unique[i] = sides.get(i).flag("unique");
      passesNullKey[i] = sides.get(i).flag("passes_null_key");
    }
    JoinOp op = new JoinOp(schemas, rowAt, padded, upsert, unique, passesNullKey, schema.fieldIndex(s.text("side")),
        schema.fieldIndex(s.text("sign")), schema.fieldIndex(s.text("kind")), schema.fieldIndex(s.text("major")),
        schema.fieldIndex(s.text("minor")), s.number("ttl_ms", 0));
    return run(input, s.strings("keys"), op, Spec.concat(signed(schemas), net()));
  }

  /** The latest row per sink key. Spec: keys, row, sign. Output: row columns, __op. */
  public static Dataset<Row> materialize(Dataset<Row> input, String json) {
    Spec s = Spec.parse(json);
    StructType schema = input.schema();
    StructType rowSchema = Spec.select(schema, s.strings("row"));
    MaterializeOp op = new MaterializeOp(rowSchema, Spec.indices(schema, s.strings("row")),
        schema.fieldIndex(s.text("sign")), s.number("ttl_ms", 0));
    return run(input, s.strings("keys"), op, Spec.concat(rowSchema, new StructType().add("__op", DataTypes.StringType)));
  }

  /** A batch's changes netted per sink key (no state). Spec: keys, row, sign. Output: row, __op. */
  public static Dataset<Row> netChanges(Dataset<Row> input, String json) {
    Spec s = Spec.parse(json);
    StructType schema = input.schema();
    StructType rowSchema = Spec.select(schema, s.strings("row"));
    NetOp op = new NetOp(Spec.indices(schema, s.strings("row")), schema.fieldIndex(s.text("sign")));
    return run(input, s.strings("keys"), op, Spec.concat(rowSchema, new StructType().add("__op", DataTypes.StringType)));
  }

  /**
   * Top-N. Spec: keys (partition), row, sort: [{column, descending, nulls_first}], sign,
   * function (row_number | rank | dense_rank), lower, upper, append_only, show_rank,
   * newest_first. Output: __sign, row columns, __rnk, __net.
   */
  public static Dataset<Row> rank(Dataset<Row> input, String json) {
    Spec s = Spec.parse(json);
    StructType schema = input.schema();
    StructType rowSchema = Spec.select(schema, s.strings("row"));
    List<Spec> sort = s.list("sort");
    List<String> sortColumns = new ArrayList<>();
    boolean[] descending = new boolean[sort.size()];
    boolean[] nullsFirst = new boolean[sort.size()];
    for (int i = 0; i < descending.length; i++) {
      sortColumns.add(sort.get(i).text("column"));
      descending[i] = sort.get(i).flag("descending");
      nullsFirst[i] = sort.get(i).flag("nulls_first");
    }
    int function;
    switch (s.text("function")) {
      case "row_number": function = RankOp.ROW_NUMBER; break;
      case "rank": function = RankOp.RANK; break;
      case "dense_rank": function = RankOp.DENSE_RANK; break;
      default: throw new IllegalArgumentException("unknown ranking function " + s.text("function"));
    }
    RankOp op = new RankOp(rowSchema, Spec.indices(schema, s.strings("row")), Spec.select(schema, sortColumns),
        Spec.indices(schema, sortColumns), descending, nullsFirst, schema.fieldIndex(s.text("sign")), function,
        s.number("lower", 1), s.number("upper", Long.MAX_VALUE), s.flag("append_only"), s.flag("show_rank"),
        s.flag("newest_first"), s.number("ttl_ms", 0));
    StructType out = Spec.concat(signed(rowSchema),
        new StructType().add("__rnk", DataTypes.LongType), net());
    return run(input, s.strings("keys"), op, out);
  }

  /**
   * The rows with one more column: each row's index within its partition (0, 1, …).
   * Streaming Spark has no row numbers (monotonically_increasing_id is refused), but a
   * file source reads each split of a file in order within one partition: together with
   * the split's start this gives every record its position in its file, without reading
   * the file whole.
   */
  public static Dataset<Row> numberRows(Dataset<Row> input, String column) {
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
   * CURRENT_WATERMARK. Spec: keys (one constant column: one sequence of rows), rowtime,
   * delay_ms, column (the output column), local (TIMESTAMP rather than TIMESTAMP_LTZ).
   * Output: the input's columns and each row's watermark.
   */
  public static Dataset<Row> currentWatermark(Dataset<Row> input, String json) {
    Spec s = Spec.parse(json);
    boolean local = s.flag("local");
    StructType output = input.schema().add(s.text("column"),
        local ? DataTypes.TimestampNTZType : DataTypes.TimestampType, true);
    WatermarkOp op = new WatermarkOp(input.schema().fieldIndex(s.text("rowtime")), s.number("delay_ms", 0), local);
    return grouped(input, s.strings("keys")).transformWithState(op, TimeMode.None(), OutputMode.Append(),
        Encoders.row(output));
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

  /** Aggregate calls of a spec as the engine's functions (see {@link #aggregate}). */
  private static Aggs.Fn[] functions(StructType schema, List<Spec> calls, boolean appendOnly, int[] argAt,
                                     StructType[] results) {
    Aggs.Fn[] fns = new Aggs.Fn[calls.size()];
    StructType out = new StructType();
    for (int i = 0; i < fns.length; i++) {
      Spec call = calls.get(i);
      boolean hasArg = call.has("arg");
      argAt[i] = hasArg ? schema.fieldIndex(call.text("arg")) : -1;
      if (call.text("fn").equals("lag")) {
        fns[i] = new OverOp.Lag(schema.apply(call.text("arg")).dataType(), (int) call.number("offset", 1));
      } else {
        fns[i] = Aggs.of(call.text("fn"), hasArg ? schema.apply(call.text("arg")).dataType() : null,
            call.type("result"), call.flag("distinct"), appendOnly, call.text("separator", ","));
      }
      out = out.add(call.text("name"), call.type("result"), true);
    }
    results[0] = out;
    return fns;
  }

  /**
   * OVER aggregation. Spec: keys (partition), row (columns passed on), time (BIGINT ms
   * column; absent: processing time), rows (frame kind), preceding (-1: UNBOUNDED), aggs
   * (as {@link #aggregate}'s, plus fn "lag" with offset and default column). Output: the
   * row columns and one column per call; append-only.
   */
  public static Dataset<Row> over(Dataset<Row> input, String json) {
    Spec s = Spec.parse(json);
    StructType schema = input.schema();
    List<Spec> calls = s.list("aggs");
    int[] argAt = new int[calls.size()];
    int[] defaultAt = new int[calls.size()];
    StructType[] results = new StructType[1];
    long preceding = s.number("preceding", -1);
    Aggs.Fn[] fns = functions(schema, calls, preceding < 0, argAt, results);
    for (int i = 0; i < defaultAt.length; i++) {
      defaultAt[i] = calls.get(i).has("default") ? schema.fieldIndex(calls.get(i).text("default")) : -1;
    }
    boolean eventTime = s.has("time");
    OverOp op = new OverOp(schema, Spec.indices(schema, s.strings("row")),
        eventTime ? schema.fieldIndex(s.text("time")) : -1, s.flag("rows"), preceding, fns, argAt, defaultAt, 0);
    StructType out = Spec.concat(Spec.select(schema, s.strings("row")), results[0]);
    return timed(input, s.strings("keys"), op, out, eventTime);
  }

  /**
   * Event-time temporal join. Spec: keys, left (columns), right (columns), side, time,
   * retract, left_outer. Output: left and right columns; append-only.
   */
  public static Dataset<Row> temporalJoin(Dataset<Row> input, String json) {
    Spec s = Spec.parse(json);
    StructType schema = input.schema();
    List<String> left = s.strings("left");
    List<String> right = s.strings("right");
    TemporalJoinOp op = new TemporalJoinOp(Spec.select(schema, left), Spec.select(schema, right),
        Spec.indices(schema, left), Spec.indices(schema, right), schema.fieldIndex(s.text("side")),
        schema.fieldIndex(s.text("time")), schema.fieldIndex(s.text("retract")), s.flag("left_outer"), 0);
    return timed(input, s.strings("keys"), op, Spec.concat(Spec.select(schema, left), Spec.select(schema, right)), true);
  }

  /**
   * Lookup join against a database table (stateless). Spec: url, driver, properties
   * ({name: value}), table, columns (database names), types (their declared Spark types,
   * a struct), key_columns (positions in columns), keys (input columns holding the key,
   * cast to the key columns' types), pass (input columns passed on), left_outer, chunk.
   * Output: the pass columns, then one column per looked-up column (named r0, r1, …).
   */
  public static Dataset<Row> lookupJoin(Dataset<Row> input, String json) {
    Spec s = Spec.parse(json);
    StructType schema = input.schema();
    java.util.Properties properties = new java.util.Properties();
    for (String name : s.strings("property_names")) {
      properties.setProperty(name, s.get("properties").text(name));
    }
    StructType types = (StructType) s.type("types");
    List<String> keyColumns = s.strings("key_columns");
    int[] keyColumnAt = new int[keyColumns.size()];
    for (int i = 0; i < keyColumnAt.length; i++) {
      keyColumnAt[i] = Integer.parseInt(keyColumns.get(i));
    }
    LookupJoin join = new LookupJoin(s.text("url"), s.text("driver", null), properties, s.text("table"),
        s.strings("columns"), types, keyColumnAt, Spec.indices(schema, s.strings("keys")),
        Spec.indices(schema, s.strings("pass")), s.flag("left_outer"), (int) s.number("chunk", 1000));
    StructType out = Spec.select(schema, s.strings("pass"));
    for (int i = 0; i < types.length(); i++) {
      out = out.add("r" + i, types.fields()[i].dataType(), true);
    }
    return input.mapPartitions((org.apache.spark.api.java.function.MapPartitionsFunction<Row, Row>) join::apply,
        Encoders.row(out));
  }

  /**
   * Window Top-N / deduplication. Spec: keys (partition, with the window), row, sort:
   * [{column, descending, nulls_first}], time (window end − 1 ms), lower, upper,
   * show_rank. Output: row columns (and __rnk); append-only.
   */
  public static Dataset<Row> windowRank(Dataset<Row> input, String json) {
    Spec s = Spec.parse(json);
    StructType schema = input.schema();
    List<Spec> sort = s.list("sort");
    int[] sortAt = new int[sort.size()];
    boolean[] descending = new boolean[sort.size()];
    boolean[] nullsFirst = new boolean[sort.size()];
    for (int i = 0; i < sortAt.length; i++) {
      sortAt[i] = schema.fieldIndex(sort.get(i).text("column"));
      descending[i] = sort.get(i).flag("descending");
      nullsFirst[i] = sort.get(i).flag("nulls_first");
    }
    boolean showRank = s.flag("show_rank");
    WindowRankOp op = new WindowRankOp(schema, Spec.indices(schema, s.strings("row")), sortAt, descending, nullsFirst,
        schema.fieldIndex(s.text("time")), s.number("lower", 1), s.number("upper", Long.MAX_VALUE), showRank);
    StructType out = Spec.select(schema, s.strings("row"));
    if (showRank) {
      out = out.add("__rnk", DataTypes.LongType, true);
    }
    return timed(input, s.strings("keys"), op, out, true);
  }

  /**
   * Window join. Spec: keys (join keys with the window bounds), left, right (columns),
   * side, time (window end − 1 ms), pad_left, pad_right. Output: left and right columns;
   * append-only.
   */
  public static Dataset<Row> windowJoin(Dataset<Row> input, String json) {
    Spec s = Spec.parse(json);
    StructType schema = input.schema();
    List<String> left = s.strings("left");
    List<String> right = s.strings("right");
    WindowJoinOp op = new WindowJoinOp(Spec.select(schema, left), Spec.select(schema, right),
        Spec.indices(schema, left), Spec.indices(schema, right), schema.fieldIndex(s.text("side")),
        schema.fieldIndex(s.text("time")), s.flag("pad_left"), s.flag("pad_right"));
    return timed(input, s.strings("keys"), op, Spec.concat(Spec.select(schema, left), Spec.select(schema, right)), true);
  }

  /**
   * The rows of a SESSION window table function. Spec: keys (the PARTITION BY columns),
   * row, time (ms), gap_ms. Output: row columns, __start, __end (ms); append-only.
   */
  public static Dataset<Row> sessionRows(Dataset<Row> input, String json) {
    Spec s = Spec.parse(json);
    StructType schema = input.schema();
    SessionOp op = new SessionOp(schema, Spec.indices(schema, s.strings("row")), schema.fieldIndex(s.text("time")),
        s.number("gap_ms", 0));
    StructType out = Spec.select(schema, s.strings("row")).add("__start", DataTypes.LongType, true)
        .add("__end", DataTypes.LongType, true);
    return timed(input, s.strings("keys"), op, out, true);
  }
}
