package streamsql.engine;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.StatefulProcessorHandle;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StructType;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Flink's aggregate functions under retraction: each one's per-group accumulator, how a
 * signed value changes it, and its result in the Flink result type.
 *
 * <p>An accumulator lives in the group's state as bytes (all of a group's accumulators in
 * one value, one state read and write per group and batch). Functions that must find the
 * next value when the current one is retracted (MIN/MAX of an updating input) or count
 * values (DISTINCT) keep a value → count map in a state variable of their own, as
 * Flink's MapView does; an append-only input needs none of that.
 */
final class Aggs {
  private Aggs() {}

  /** One aggregate call: creates, updates and reads its per-group accumulators. */
  abstract static class Fn implements Serializable {
    final DataType argType;
    final DataType resultType;

    Fn(DataType argType, DataType resultType) {
      this.argType = argType;
      this.resultType = resultType;
    }

    /** Declare state variables of its own (called once per task). */
    void open(StatefulProcessorHandle handle, String name, TTLConfig ttl) {}

    abstract Acc create();

    abstract Acc read(DataInputStream in) throws IOException;

    /** The group is gone: drop what the function keeps outside the accumulator. */
    void clear() {}

    /**
     * Must a group's accumulator be made anew when its last row is retracted? The built-in
     * ones are empty then anyway; a user's may not be.
     */
    boolean startsAfresh() {
      return false;
    }

    /** Does the result depend on the order of the values (see {@link AggregateOp})? */
    boolean dependsOnOrder() {
      return false;
    }
  }

  /** A group's accumulator of one aggregate call. */
  interface Acc {
    /** Add {@code n} copies of {@code value} (retract them when n is negative). */
    void add(Object value, long n);

    Object result();

    void write(DataOutputStream out) throws IOException;
  }

  /** The function an aggregate call of the planner's specification names. */
  static Fn of(String name, DataType argType, DataType resultType, boolean distinct, boolean appendOnly,
               String separator) {
    if (distinct && argType != null && !name.equals("min") && !name.equals("max")) {
      // ARRAY_AGG(DISTINCT x) keeps one NULL, as Flink's does; the others ignore NULLs.
      return new Distinct(of(name, argType, resultType, false, true, separator), name.equals("array_agg"));
    }
    switch (name) {
      case "count_star": return new Count(argType, resultType, true);
      case "count": return new Count(argType, resultType, false);
      case "sum": return new Sum(argType, resultType, false);
      case "avg": return new Sum(argType, resultType, true);
      case "min": return new MinMax(argType, resultType, false, appendOnly);
      case "max": return new MinMax(argType, resultType, true, appendOnly);
      case "listagg": return new Sequence(argType, resultType, Sequence.LISTAGG, separator);
      case "first_value": return new Sequence(argType, resultType, Sequence.FIRST, null);
      case "last_value": return new Sequence(argType, resultType, Sequence.LAST, null);
      case "array_agg": return new Sequence(argType, resultType, Sequence.ARRAY, null);
      case "array_agg_ignore_nulls": return new Sequence(argType, resultType, Sequence.ARRAY_IGNORING_NULLS, null);
      case "json_arrayagg_null_on_null": return new Sequence(argType, resultType, Sequence.JSON_ARRAY, null);
      case "json_arrayagg_absent_on_null":
        return new Sequence(argType, resultType, Sequence.JSON_ARRAY_ABSENT_NULLS, null);
      case "json_objectagg_null_on_null": return new JsonObject(argType, resultType, false);
      case "json_objectagg_absent_on_null": return new JsonObject(argType, resultType, true);
      default: throw new IllegalArgumentException("unknown aggregate function " + name);
    }
  }

  // ------------------------------------------------------------------ results

  /** A whole number in the result type, wrapping on overflow as Flink's integer types do. */
  static Object integral(long v, DataType type) {
    if (type instanceof IntegerType) {
      return (int) v;
    }
    if (type instanceof ShortType) {
      return (short) v;
    }
    if (type instanceof ByteType) {
      return (byte) v;
    }
    if (type instanceof DecimalType) {
      return BigDecimal.valueOf(v).setScale(((DecimalType) type).scale(), RoundingMode.HALF_UP);
    }
    if (type instanceof DoubleType) {
      return (double) v;
    }
    if (type instanceof FloatType) {
      return (float) v;
    }
    return v;
  }

  static boolean isIntegral(DataType t) {
    return t instanceof LongType || t instanceof IntegerType || t instanceof ShortType || t instanceof ByteType;
  }

  // ------------------------------------------------------------------ COUNT

  static final class Count extends Fn {
    private final boolean star;

    Count(DataType argType, DataType resultType, boolean star) {
      super(argType, resultType);
      this.star = star;
    }

    @Override
    Acc create() {
      return new CountAcc(star, 0);
    }

    @Override
    Acc read(DataInputStream in) throws IOException {
      return new CountAcc(star, in.readLong());
    }
  }

  static final class CountAcc implements Acc {
    private final boolean star;
    long n;

    CountAcc(boolean star, long n) {
      this.star = star;
      this.n = n;
    }

    @Override
    public void add(Object value, long k) {
      if (star || value != null) {
        n += k;
      }
    }

    @Override
    public Object result() {
      return n;
    }

    @Override
    public void write(DataOutputStream out) throws IOException {
      out.writeLong(n);
    }
  }

  // ------------------------------------------------------------------ SUM / AVG

  /** SUM and AVG: a sum in the argument's kind of number and a count of the values. */
  static final class Sum extends Fn {
    private final boolean average;

    Sum(DataType argType, DataType resultType, boolean average) {
      super(argType, resultType);
      this.average = average;
    }

    @Override
    Acc create() {
      return new SumAcc(this, 0, 0.0, BigDecimal.ZERO, 0);
    }

    @Override
    Acc read(DataInputStream in) throws IOException {
      long count = in.readLong();
      if (argType instanceof DecimalType) {
        return new SumAcc(this, 0, 0.0, (BigDecimal) Values.read(in), count);
      }
      if (isIntegral(argType)) {
        return new SumAcc(this, in.readLong(), 0.0, null, count);
      }
      return new SumAcc(this, 0, in.readDouble(), null, count);
    }

    Object result(long whole, double real, BigDecimal exact, long count) {
      if (count == 0) {
        return null;
      }
      if (argType instanceof DecimalType) {
        int scale = resultType instanceof DecimalType ? ((DecimalType) resultType).scale() : exact.scale();
        BigDecimal value = average ? exact.divide(BigDecimal.valueOf(count), scale, RoundingMode.HALF_UP)
                                   : exact.setScale(scale, RoundingMode.HALF_UP);
        return resultType instanceof DecimalType ? value : value.doubleValue();
      }
      if (isIntegral(argType)) {
        // Java's long division truncates toward zero, as Flink's integer AVG does.
        return integral(average ? whole / count : whole, resultType);
      }
      double value = average ? real / count : real;
      return resultType instanceof FloatType ? (Object) (float) value : (Object) value;
    }
  }

  static final class SumAcc implements Acc {
    private final Sum fn;
    long whole;
    double real;
    BigDecimal exact;
    long count;

    SumAcc(Sum fn, long whole, double real, BigDecimal exact, long count) {
      this.fn = fn;
      this.whole = whole;
      this.real = real;
      this.exact = exact;
      this.count = count;
    }

    @Override
    public void add(Object value, long n) {
      if (value == null) {
        return;
      }
      count += n;
      if (value instanceof BigDecimal) {
        exact = exact.add(((BigDecimal) value).multiply(BigDecimal.valueOf(n)));
      } else if (value instanceof Double || value instanceof Float) {
        real += ((Number) value).doubleValue() * n;
      } else {
        whole += ((Number) value).longValue() * n;
      }
    }

    @Override
    public Object result() {
      return fn.result(whole, real, exact, count);
    }

    @Override
    public void write(DataOutputStream out) throws IOException {
      out.writeLong(count);
      if (fn.argType instanceof DecimalType) {
        Values.write(out, exact);
      } else if (isIntegral(fn.argType)) {
        out.writeLong(whole);
      } else {
        out.writeDouble(real);
      }
    }
  }

  // ------------------------------------------------------------------ MIN / MAX

  /**
   * MIN and MAX. Over an append-only input the accumulator is the best value so far;
   * over an updating one every value is counted in a map, so that retracting the current
   * best finds the next one (Flink's MinWithRetract/MaxWithRetract).
   */
  static final class MinMax extends Fn {
    private final boolean max;
    private final boolean appendOnly;
    private transient MapState<Row, Long> counts;

    MinMax(DataType argType, DataType resultType, boolean max, boolean appendOnly) {
      super(argType, resultType);
      this.max = max;
      this.appendOnly = appendOnly;
    }

    @Override
    void open(StatefulProcessorHandle handle, String name, TTLConfig ttl) {
      if (!appendOnly) {
        counts = StateVars.map(handle, name, Encoders.row(new StructType().add("v", argType)), Encoders.LONG(), ttl);
      }
    }

    boolean better(Object candidate, Object best) {
      int c = Values.compare(candidate, best);
      return max ? c > 0 : c < 0;
    }

    @Override
    Acc create() {
      return new MinMaxAcc(this, null, true);
    }

    @Override
    Acc read(DataInputStream in) throws IOException {
      boolean known = in.readBoolean();
      return new MinMaxAcc(this, Values.read(in), known);
    }

    @Override
    void clear() {
      if (counts != null) {
        counts.clear();
      }
    }
  }

  static final class MinMaxAcc implements Acc {
    private final MinMax fn;
    Object best;
    boolean known; // false: the best value was retracted; find the next one in the map

    MinMaxAcc(MinMax fn, Object best, boolean known) {
      this.fn = fn;
      this.best = best;
      this.known = known;
    }

    @Override
    public void add(Object value, long n) {
      if (value == null) {
        return;
      }
      if (fn.appendOnly) {
        if (n < 0) {
          throw new IllegalStateException("MIN/MAX planned for an append-only input received a retraction");
        }
        if (best == null || fn.better(value, best)) {
          best = value;
        }
        return;
      }
      Row key = RowFactory.create(value);
      Long had = fn.counts.getValue(key);
      long now = (had == null ? 0 : had) + n;
      if (now != 0) {
        fn.counts.updateValue(key, now);
      } else {
        fn.counts.removeKey(key);
      }
      if (now > 0 && known && (best == null || fn.better(value, best))) {
        best = value;
      } else if (now <= 0 && known && best != null && Values.same(value, best)) {
        known = false;
      }
    }

    @Override
    public Object result() {
      if (!known) {
        best = null;
        scala.collection.Iterator<scala.Tuple2<Row, Long>> entries = fn.counts.iterator();
        while (entries.hasNext()) {
          scala.Tuple2<Row, Long> entry = entries.next();
          Object v = entry._1().get(0);
          if (entry._2() > 0 && (best == null || fn.better(v, best))) {
            best = v;
          }
        }
        known = true;
      }
      return best;
    }

    @Override
    public void write(DataOutputStream out) throws IOException {
      result();
      out.writeBoolean(known);
      Values.write(out, best);
    }
  }

  // ------------------------------------------------------------------ LISTAGG / FIRST_VALUE / LAST_VALUE

  /**
   * Functions of the values' arrival order. LISTAGG joins the non-NULL values with its
   * separator; FIRST_VALUE and LAST_VALUE show the earliest and the latest non-NULL
   * value; ARRAY_AGG is the values as an array (NULLs too, unless IGNORE NULLS), NULL
   * when there are none. A retraction removes the value's earliest occurrence, as Flink's
   * ListAggWithRetract, First/LastValueWithRetract and ArrayAggFunction do.
   */
  static final class Sequence extends Fn {
    static final int LISTAGG = 0, FIRST = 1, LAST = 2, ARRAY = 3, ARRAY_IGNORING_NULLS = 4;
    // JSON_ARRAYAGG of JSON texts: NULL written as null (NULL ON NULL) or left out.
    static final int JSON_ARRAY = 5, JSON_ARRAY_ABSENT_NULLS = 6;
    private final int kind;
    private final String separator;

    Sequence(DataType argType, DataType resultType, int kind, String separator) {
      super(argType, resultType);
      this.kind = kind;
      this.separator = separator;
    }

    @Override
    boolean dependsOnOrder() {
      return true;
    }

    @Override
    Acc create() {
      return new SequenceAcc(this, new ArrayList<>());
    }

    @Override
    Acc read(DataInputStream in) throws IOException {
      int n = in.readInt();
      List<Object> values = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        values.add(Values.read(in));
      }
      return new SequenceAcc(this, values);
    }
  }

  static final class SequenceAcc implements Acc {
    private final Sequence fn;
    private final List<Object> values;

    SequenceAcc(Sequence fn, List<Object> values) {
      this.fn = fn;
      this.values = values;
    }

    @Override
    public void add(Object value, long n) {
      if (value == null && fn.kind != Sequence.ARRAY && fn.kind != Sequence.JSON_ARRAY) {
        return;
      }
      for (long i = 0; i < n; i++) {
        values.add(value);
      }
      for (long i = 0; i < -n; i++) {
        for (int j = 0; j < values.size(); j++) {
          Object had = values.get(j);
          if (had == null ? value == null : value != null && Values.same(had, value)) {
            values.remove(j);
            break;
          }
        }
      }
    }

    @Override
    public Object result() {
      if (fn.kind == Sequence.JSON_ARRAY || fn.kind == Sequence.JSON_ARRAY_ABSENT_NULLS) {
        StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < values.size(); i++) {
          out.append(i > 0 ? "," : "").append(values.get(i) == null ? "null" : values.get(i));
        }
        return out.append(']').toString();
      }
      if (values.isEmpty()) {
        return null;
      }
      switch (fn.kind) {
        case Sequence.FIRST: return values.get(0);
        case Sequence.LAST: return values.get(values.size() - 1);
        case Sequence.ARRAY:
        case Sequence.ARRAY_IGNORING_NULLS:
          return CollectionConverters.asScala(new ArrayList<>(values)).toSeq();
        default: {
          StringBuilder out = new StringBuilder();
          for (int i = 0; i < values.size(); i++) {
            if (i > 0) {
              out.append(fn.separator);
            }
            out.append(values.get(i));
          }
          return out.toString();
        }
      }
    }

    @Override
    public void write(DataOutputStream out) throws IOException {
      out.writeInt(values.size());
      for (Object v : values) {
        Values.write(out, v);
      }
    }
  }

  // ------------------------------------------------------------------ JSON_OBJECTAGG

  /**
   * JSON_OBJECTAGG over (key, JSON text of the value) pairs, as Flink's JsonObjectAggFunction:
   * a key already held, or a NULL key, fails the query; a NULL value is held as null
   * unless ABSENT ON NULL. A retraction removes its key only when the value held is the
   * one retracted (a NULL never equals the value held, so Flink keeps the key then). The
   * keys are written sorted, as Flink's JSON writer sorts them.
   */
  static final class JsonObject extends Fn {
    private final boolean skipNulls;

    JsonObject(DataType argType, DataType resultType, boolean skipNulls) {
      super(argType, resultType);
      this.skipNulls = skipNulls;
    }

    @Override
    Acc create() {
      return new JsonObjectAcc(this, new TreeMap<>());
    }

    @Override
    Acc read(DataInputStream in) throws IOException {
      int n = in.readInt();
      TreeMap<String, String> members = new TreeMap<>();
      for (int i = 0; i < n; i++) {
        String key = (String) Values.read(in);
        members.put(key, (String) Values.read(in));
      }
      return new JsonObjectAcc(this, members);
    }
  }

  static final class JsonObjectAcc implements Acc {
    private final JsonObject fn;
    private final TreeMap<String, String> members;

    JsonObjectAcc(JsonObject fn, TreeMap<String, String> members) {
      this.fn = fn;
      this.members = members;
    }

    @Override
    public void add(Object pair, long n) {
      Row row = (Row) pair;
      String key = row.getString(0);
      String value = row.getString(1);
      if (key == null) {
        throw new IllegalArgumentException("JSON_OBJECTAGG received a NULL key; Flink fails the job on it too "
            + "(Map views don't support null keys). Give the key a value, e.g. COALESCE(key, '…').");
      }
      for (long i = 0; i < n; i++) {
        if (members.containsKey(key)) {
          throw new IllegalArgumentException("Key '" + key + "' is already present. Duplicate keys are not "
              + "allowed in JSON_OBJECTAGG. Please ensure that keys are unique.");
        }
        if (value != null || !fn.skipNulls) {
          members.put(key, value);
        }
      }
      for (long i = 0; i < -n; i++) {
        if (value != null && members.containsKey(key) && value.equals(members.get(key))) {
          members.remove(key);
        }
      }
    }

    @Override
    public Object result() {
      StringBuilder out = new StringBuilder("{");
      for (Map.Entry<String, String> e : members.entrySet()) {
        if (out.length() > 1) {
          out.append(',');
        }
        jsonString(out, e.getKey()).append(':').append(e.getValue() == null ? "null" : e.getValue());
      }
      return out.append('}').toString();
    }

    @Override
    public void write(DataOutputStream out) throws IOException {
      out.writeInt(members.size());
      for (Map.Entry<String, String> e : members.entrySet()) {
        Values.write(out, e.getKey());
        Values.write(out, e.getValue());
      }
    }
  }

  /** A JSON string literal, escaped as Jackson escapes it ('"', '\\' and control characters). */
  static StringBuilder jsonString(StringBuilder out, String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"': out.append("\\\""); break;
        case '\\': out.append("\\\\"); break;
        case '\b': out.append("\\b"); break;
        case '\f': out.append("\\f"); break;
        case '\n': out.append("\\n"); break;
        case '\r': out.append("\\r"); break;
        case '\t': out.append("\\t"); break;
        default:
          if (c < 0x20) {
            out.append(String.format("\\u%04X", (int) c));
          } else {
            out.append(c);
          }
      }
    }
    return out.append('"');
  }

  // ------------------------------------------------------------------ a user's AggregateFunction

  /**
   * A user's Flink aggregate function call (function "user"): its argument is the struct of
   * the call's arguments, NULL for a row its FILTER leaves out (which Flink does not pass
   * to accumulate). {@code f(DISTINCT …)} wraps it in {@link Distinct}, which then sees
   * each distinct struct of arguments, NULL fields and all, as Flink's does.
   */
  static Fn user(streamsql.engine.udf.FlinkAggregate function, DataType argType, DataType resultType,
                 boolean distinct, boolean inOrder) {
    Fn fn = new User(function, argType, resultType, inOrder);
    return distinct ? new Distinct(fn, false) : fn;
  }

  static final class User extends Fn {
    private final streamsql.engine.udf.FlinkAggregate function;
    // The input keeps its order (a table's rows, a normalized changelog's positions): the
    // changes are applied one by one in Flink's order, as a function's result may depend
    // on it. Else they are netted per argument tuple, retractions first.
    private final boolean inOrder;

    User(streamsql.engine.udf.FlinkAggregate function, DataType argType, DataType resultType, boolean inOrder) {
      super(argType, resultType);
      this.function = function;
      this.inOrder = inOrder;
    }

    @Override
    boolean dependsOnOrder() {
      return inOrder;
    }

    @Override
    boolean startsAfresh() {
      return true;
    }

    @Override
    Acc create() {
      return new UserAcc(function, function.createAccumulator());
    }

    @Override
    Acc read(DataInputStream in) throws IOException {
      byte[] bytes = new byte[in.readInt()];
      in.readFully(bytes);
      return new UserAcc(function, function.read(bytes));
    }
  }

  static final class UserAcc implements Acc {
    private final streamsql.engine.udf.FlinkAggregate function;
    private final Object accumulator;

    UserAcc(streamsql.engine.udf.FlinkAggregate function, Object accumulator) {
      this.function = function;
      this.accumulator = accumulator;
    }

    @Override
    public void add(Object value, long n) {
      if (value != null) {
        function.add(accumulator, (Row) value, n);
      }
    }

    @Override
    public Object result() {
      return function.value(accumulator);
    }

    @Override
    public void write(DataOutputStream out) throws IOException {
      byte[] bytes = function.write(accumulator);
      out.writeInt(bytes.length);
      out.write(bytes);
    }
  }

  // ------------------------------------------------------------------ DISTINCT

  /** {@code f(DISTINCT x)}: counts each value; the inner function sees a value when its
   * count rises from zero and loses it when the count falls back to zero. */
  static final class Distinct extends Fn {
    private final Fn inner;
    private final boolean keepsNull;
    private transient MapState<Row, Long> counts;

    Distinct(Fn inner, boolean keepsNull) {
      super(inner.argType, inner.resultType);
      this.inner = inner;
      this.keepsNull = keepsNull;
    }

    @Override
    boolean dependsOnOrder() {
      return inner.dependsOnOrder();
    }

    @Override
    boolean startsAfresh() {
      return inner.startsAfresh();
    }

    @Override
    void open(StatefulProcessorHandle handle, String name, TTLConfig ttl) {
      counts = StateVars.map(handle, name, Encoders.row(new StructType().add("v", argType)), Encoders.LONG(), ttl);
      inner.open(handle, name + "_inner", ttl);
    }

    @Override
    Acc create() {
      return new DistinctAcc(this, inner.create());
    }

    @Override
    Acc read(DataInputStream in) throws IOException {
      return new DistinctAcc(this, inner.read(in));
    }

    @Override
    void clear() {
      counts.clear();
      inner.clear();
    }
  }

  static final class DistinctAcc implements Acc {
    private final Distinct fn;
    private final Acc inner;

    DistinctAcc(Distinct fn, Acc inner) {
      this.fn = fn;
      this.inner = inner;
    }

    @Override
    public void add(Object value, long n) {
      if (value == null && !fn.keepsNull) {
        return;
      }
      Row key = RowFactory.create(value);
      Long had = fn.counts.getValue(key);
      long before = had == null ? 0 : had;
      long now = before + n;
      if (now != 0) {
        fn.counts.updateValue(key, now);
      } else {
        fn.counts.removeKey(key);
      }
      if (before <= 0 && now > 0) {
        inner.add(value, 1);
      } else if (before > 0 && now <= 0) {
        inner.add(value, -1);
      }
    }

    @Override
    public Object result() {
      return inner.result();
    }

    @Override
    public void write(DataOutputStream out) throws IOException {
      inner.write(out);
    }
  }
}
