package streamsql.engine.formats;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.classic.ExpressionUtils;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;
import streamsql.engine.spec.DecodedColumn;
import streamsql.engine.spec.JsonDecoding;
import streamsql.engine.spec.Specs;

/**
 * A JSON or Debezium JSON record decoded straight into Spark's row with Jackson's
 * streaming parser, for a table whose columns are all of simple types.
 *
 * <p>The format's general decoder (Spark's {@code from_json} plus the conversions that
 * give Flink's rules, job/formats/) is the definition; it is this expression's second
 * child, a {@code struct<row, error>}. Correctness argument: for a record this class
 * decodes, it returns what the general decoder returns; for any other it returns the
 * general decoder's own result. It decodes only a clean record: one JSON object whose known
 * fields each appear once with a value of exactly the column's JSON kind (a string for
 * STRING, an integer in range for the integer types, a finite number for FLOAT and DOUBLE,
 * a number without exponent of at most 38 digits for DECIMAL, true or false for BOOLEAN, or
 * null), nothing after the object, and, for Debezium, an op
 * of c, r, u or d with the image that op needs. Such a record is good for the general
 * decoder too (error NULL), and its values are the ones the general decoder computes:
 * Spark's reader writes a number it reads as text through Jackson's double (so 1.50 is
 * "1.5"), which the general decoder then casts (a DECIMAL column's number is exact, read
 * as a VARIANT); the same steps are taken here. Anything
 * else (a number as text, a malformed record, a duplicate field, a missing op, a value out
 * of range) is the general decoder's: it runs, with its common parts evaluated once, only
 * for such records.
 */
public final class FastJson extends Expression implements CodegenFallback, java.io.Serializable {
  private static final long serialVersionUID = 1L;
  private static final JsonFactory JSON = new JsonFactory();  // thread-safe once made
  // The general decoder's projection per executor thread, kept across tasks: each task
  // deserializes its own copy of this expression, and generating the projection's code
  // (common subexpressions and all) is tens of milliseconds, per task and micro-batch of a
  // stream whose tombstones and odd records need it.
  private static final int KEPT_PROJECTIONS = 64;  // per thread, the most recently made
  // Keyed by the bound general decoder's full tree text: the expressions themselves are no
  // key, as copies of a lambda's variable (the general decoder reads its from_json once,
  // through a lambda) are never equal.
  private static final ThreadLocal<Map<String, UnsafeProjection>> GENERAL_PROJECTIONS =
      ThreadLocal.withInitial(() -> new java.util.LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, UnsafeProjection> eldest) {
          return size() > KEPT_PROJECTIONS;
        }
      });

  /** Column kinds this decoder reads; any other type keeps the general decoder alone. */
  private static final int STRING = 0, BYTE = 1, SHORT = 2, INT = 3, LONG = 4, FLOAT = 5, DOUBLE = 6, BOOLEAN = 7,
      DECIMAL = 8;
  private static final String[] KINDS = {"string", "byte", "short", "integer", "long", "float", "double", "boolean",
      "decimal"};
  /** Number text without an exponent, as the general decoder's cast reads it exactly. */
  private static final java.util.regex.Pattern PLAIN_NUMBER = java.util.regex.Pattern.compile("-?[0-9]+(\\.[0-9]+)?");
  private static final java.util.regex.Pattern DECIMAL_KIND = java.util.regex.Pattern.compile("decimal\\((\\d+),(\\d+)\\)");

  private final Expression value;
  private final Expression general;
  private final String spec;
  private final scala.collection.immutable.Seq<Expression> children;

  // Read from the spec on first use (on the executor, after deserialization).
  private transient boolean debezium;
  private transient boolean payload;
  private transient Map<String, Integer> index;
  private transient int[] kinds;
  private transient int[] precision, scale;  // of DECIMAL columns
  private transient boolean ready;
  private transient UnsafeProjection generalProjection;
  private transient DataType type;

  public FastJson(Expression value, Expression general, String spec) {
    this.value = value;
    this.general = general;
    this.spec = spec;
    this.children = scala.jdk.javaapi.CollectionConverters.asScala(java.util.List.of(value, general)).toList();
  }

  /**
   * {@code struct<row, error>} of {@code value} (a string or binary column): the fast
   * decoder for clean records, {@code general} (the same struct) for every other.
   * {@code spec}: a {@link JsonDecoding} as JSON (job/changelog/specs.py).
   */
  public static Column decode(Column value, Column general, String spec) {
    readSpec(spec, null);  // fail on the driver, not in a task
    return ExpressionUtils.column(
        new FastJson(ExpressionUtils.expression(value), ExpressionUtils.expression(general), spec));
  }

  @Override
  public Object eval(InternalRow input) {
    Object text = value.eval(input);
    if (text != null) {
      InternalRow row = decodeClean(text);
      if (row != null) {
        return new GenericInternalRow(new Object[] {row, null});
      }
    }
    if (generalProjection == null) {
      // One projection of the general decoder, with Spark's common-subexpression
      // elimination: its from_json runs once per record, not once per use.
      String key = general.treeString(true, false, Integer.MAX_VALUE, false, false);
      generalProjection = GENERAL_PROJECTIONS.get().computeIfAbsent(key, k -> UnsafeProjection.create(general));
    }
    return generalProjection.apply(input).getStruct(0, 2).copy();
  }

  /** The decoded row (or change) of a clean record; null for any other. */
  private InternalRow decodeClean(Object text) {
    if (!ready) {
      readSpec(spec, this);
      ready = true;
    }
    try (JsonParser p = parser(text)) {
      if (p == null || p.nextToken() != JsonToken.START_OBJECT) {
        return null;
      }
      InternalRow result = payload ? inPayload(p) : debezium ? change(p) : row(p);
      return result != null && p.nextToken() == null ? result : null;
    } catch (IOException e) {
      return null;  // malformed (or trailing text): the general decoder says how
    }
  }

  /** A parser of the record's bytes as UTF-8, or null when Jackson might read them otherwise. */
  private JsonParser parser(Object text) throws IOException {
    byte[] bytes;
    int offset, length;
    UTF8String s = text instanceof UTF8String ? (UTF8String) text : null;
    if (s != null && s.getBaseObject() instanceof byte[]) {
      bytes = (byte[]) s.getBaseObject();
      offset = (int) (s.getBaseOffset() - Platform.BYTE_ARRAY_OFFSET);
      length = s.numBytes();
    } else {
      bytes = s != null ? s.getBytes() : (byte[]) text;
      offset = 0;
      length = bytes.length;
    }
    // Jackson guesses the encoding of bytes from a byte-order mark or zero bytes at the
    // start; the general decoder reads them as UTF-8 text. Such records are its.
    for (int i = offset; i < offset + Math.min(length, 4); i++) {
      int b = bytes[i] & 0xff;
      if (b == 0 || (i == offset && b >= 0xef)) {
        return null;
      }
    }
    return JSON.createParser(bytes, offset, length);
  }

  /** Debezium's schema-include: the change under the root object's "payload". */
  private InternalRow inPayload(JsonParser p) throws IOException {
    InternalRow change = null;
    JsonToken t;
    while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
      boolean isPayload = "payload".equals(p.currentName());
      t = p.nextToken();
      if (!isPayload) {
        p.skipChildren();
      } else if (change != null || t != JsonToken.START_OBJECT || (change = change(p)) == null) {
        return null;
      }
    }
    return change;
  }

  /** struct<before, after, op> of a Debezium change; the parser is on its START_OBJECT. */
  private InternalRow change(JsonParser p) throws IOException {
    Object before = null, after = null;
    String op = null;
    int seen = 0;  // bits: before, after, op, ts_ms
    JsonToken t;
    while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
      String name = p.currentName();
      t = p.nextToken();
      int bit = "before".equals(name) ? 1 : "after".equals(name) ? 2 : "op".equals(name) ? 4 : "ts_ms".equals(name) ? 8 : 0;
      if (bit == 0) {
        p.skipChildren();
        continue;
      }
      if ((seen & bit) != 0) {
        return null;
      }
      seen |= bit;
      if (bit == 1 || bit == 2) {
        if (t == JsonToken.START_OBJECT) {
          InternalRow image = row(p);
          if (image == null) {
            return null;
          }
          if (bit == 1) {
            before = image;
          } else {
            after = image;
          }
        } else if (t != JsonToken.VALUE_NULL) {
          return null;
        }
      } else if (bit == 4) {
        if (t != JsonToken.VALUE_STRING) {
          return null;
        }
        op = p.getText();
      } else if (t != JsonToken.VALUE_NULL && !(t == JsonToken.VALUE_NUMBER_INT && fitsLong(p))) {
        return null;  // ts_ms is read as BIGINT: anything else makes the record malformed
      }
    }
    boolean good = op != null && switch (op) {
      case "c", "r", "u" -> after != null;
      case "d" -> before != null;
      default -> false;
    };
    return good ? new GenericInternalRow(new Object[] {before, after, UTF8String.fromString(op)}) : null;
  }

  /** The row of the object the parser is on (at its START_OBJECT), or null. */
  private InternalRow row(JsonParser p) throws IOException {
    Object[] values = new Object[kinds.length];
    boolean[] seen = new boolean[kinds.length];
    JsonToken t;
    while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
      Integer i = index.get(p.currentName());
      t = p.nextToken();
      if (i == null) {
        p.skipChildren();
        continue;
      }
      if (seen[i]) {
        return null;
      }
      seen[i] = true;
      if (t == JsonToken.VALUE_NULL) {
        continue;
      }
      Object v = value(p, t, i);
      if (v == null) {
        return null;
      }
      values[i] = v;
    }
    return new GenericInternalRow(values);
  }

  /** Column {@code column}'s value of a non-null JSON value, or null when it is not clean. */
  private Object value(JsonParser p, JsonToken t, int column) throws IOException {
    int kind = kinds[column];
    switch (kind) {
      case STRING:
        return t == JsonToken.VALUE_STRING ? UTF8String.fromString(p.getText()) : null;
      case BOOLEAN:
        return t == JsonToken.VALUE_TRUE ? Boolean.TRUE : t == JsonToken.VALUE_FALSE ? Boolean.FALSE : null;
      case DECIMAL: {
        // The general decoder reads a DECIMAL column as a VARIANT, which keeps a number
        // without exponent of at most 38 digits and scale 38 exactly (Spark's
        // VariantBuilder.tryParseDecimal), and casts its text to DECIMAL(p, s), rounding
        // half up; a value that does not fit is NULL there. Only such numbers are read here.
        java.math.BigDecimal exact = exactDecimal(p, t);
        if (exact == null) {
          return null;
        }
        java.math.BigDecimal d = exact.setScale(scale[column], java.math.RoundingMode.HALF_UP);
        return d.precision() <= precision[column] ? org.apache.spark.sql.types.Decimal.apply(d, precision[column],
            scale[column]) : null;
      }
      case FLOAT:
      case DOUBLE: {
        // The general decoder casts the written text (Double.parseDouble / Float.parseFloat).
        String written = written(p, t);
        if (written == null) {
          return null;
        }
        if (kind == DOUBLE) {
          double d = Double.parseDouble(written);
          return Double.isFinite(d) ? d : null;
        }
        float f = Float.parseFloat(written);
        return Float.isFinite(f) ? f : null;
      }
      default: {  // the integer types
        if (t != JsonToken.VALUE_NUMBER_INT || !fitsLong(p)) {
          return null;
        }
        long n = p.getLongValue();
        switch (kind) {
          case BYTE:
            return n == (byte) n ? (Object) (byte) n : null;
          case SHORT:
            return n == (short) n ? (Object) (short) n : null;
          case INT:
            return n == (int) n ? (Object) (int) n : null;
          default:
            return n;
        }
      }
    }
  }

  /**
   * A number's text as Spark's reader writes it for the general decoder, which reads
   * number columns as text: an integer as Jackson's long, any other number as Jackson's
   * double ("1.50" becomes "1.5"); null for anything else (an integer beyond a long too).
   */
  private static String written(JsonParser p, JsonToken t) throws IOException {
    if (t == JsonToken.VALUE_NUMBER_INT) {
      return fitsLong(p) ? Long.toString(p.getLongValue()) : null;
    }
    return t == JsonToken.VALUE_NUMBER_FLOAT ? Double.toString(p.getDoubleValue()) : null;
  }

  /** A number's exact value when a VARIANT holds it as a decimal (see value()), else null. */
  private static java.math.BigDecimal exactDecimal(JsonParser p, JsonToken t) throws IOException {
    if (t != JsonToken.VALUE_NUMBER_FLOAT && t != JsonToken.VALUE_NUMBER_INT) {
      return null;
    }
    if (t == JsonToken.VALUE_NUMBER_INT && fitsLong(p)) {
      return java.math.BigDecimal.valueOf(p.getLongValue());
    }
    String text = p.getText();
    if (!PLAIN_NUMBER.matcher(text).matches()) {
      return null;
    }
    java.math.BigDecimal d = new java.math.BigDecimal(text);
    return d.precision() <= 38 && d.scale() <= 38 ? d : null;
  }

  private static boolean fitsLong(JsonParser p) throws IOException {
    JsonParser.NumberType type = p.getNumberType();
    return type == JsonParser.NumberType.INT || type == JsonParser.NumberType.LONG;
  }

  /** Checks ``text`` (a {@link JsonDecoding}); with ``into``, sets its decoding fields. */
  private static void readSpec(String text, FastJson into) {
    JsonDecoding spec = Specs.read(text, JsonDecoding.class);
    String envelope = spec.envelope();
    if (!envelope.equals("row") && !envelope.equals("debezium")) {
      throw new IllegalArgumentException("unknown envelope in " + text);
    }
    Map<String, Integer> index = new HashMap<>();
    int n = spec.columns().size();
    int[] kinds = new int[n], precision = new int[n], scale = new int[n];
    for (int i = 0; i < n; i++) {
      DecodedColumn column = spec.columns().get(i);
      index.put(column.name(), i);
      String kind = column.kind();
      java.util.regex.Matcher decimal = DECIMAL_KIND.matcher(kind);
      if (decimal.matches()) {
        kinds[i] = DECIMAL;
        precision[i] = Integer.parseInt(decimal.group(1));
        scale[i] = Integer.parseInt(decimal.group(2));
      } else {
        kinds[i] = kind.equals("decimal") ? -1 : java.util.Arrays.asList(KINDS).indexOf(kind);
      }
      if (kinds[i] < 0) {
        throw new IllegalArgumentException("the fast JSON decoder does not read " + kind + ": " + text);
      }
    }
    if (into != null) {
      into.debezium = envelope.equals("debezium");
      into.payload = spec.payload();
      into.index = index;
      into.kinds = kinds;
      into.precision = precision;
      into.scale = scale;
    }
  }

  // Scala's BinaryExpression cannot be extended from Java (its generic trait methods
  // clash), so the two children are declared here.
  @Override
  public scala.collection.immutable.Seq<Expression> children() {
    return children;
  }

  // The general decoder's struct, every field nullable: a clean record has no error even
  // where the general decoder's type says it always has one.
  @Override
  public DataType dataType() {
    if (type == null) {
      type = general.dataType().asNullable();
    }
    return type;
  }

  @Override
  public boolean nullable() {
    return general.nullable();
  }

  /**
   * Declared nondeterministic, though it is not, so that Spark's optimizer keeps the
   * decoding in the one projection that computes it: a deterministic projection lets it
   * push the filters above (the bad-record check) below it with the decoding copied in,
   * and merge the projection with the one above it, which then decodes again. A Kafka
   * table with one value column was decoded twice per record that way.
   */
  @Override
  public boolean deterministic() {
    return false;
  }

  @Override
  public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
    return CodegenFallback.super.doGenCode(ctx, ev);
  }

  @Override
  public Expression withNewChildrenInternal(scala.collection.immutable.IndexedSeq<Expression> children) {
    return new FastJson(children.apply(0), children.apply(1), spec);
  }

  @Override
  public String prettyName() {
    return "fast_json";
  }

  @Override
  public int productArity() {
    return 3;
  }

  @Override
  public Object productElement(int n) {
    switch (n) {
      case 0:
        return value;
      case 1:
        return general;
      case 2:
        return spec;
      default:
        throw new IndexOutOfBoundsException(String.valueOf(n));
    }
  }

  @Override
  public boolean canEqual(Object that) {
    return that instanceof FastJson;
  }

  // Equal copies are one subexpression: the row and the error it yields are read from
  // one decoding per record.
  @Override
  public boolean equals(Object that) {
    if (!(that instanceof FastJson)) {
      return false;
    }
    FastJson other = (FastJson) that;
    return spec.equals(other.spec) && value.equals(other.value) && general.equals(other.general);
  }

  @Override
  public int hashCode() {
    return Objects.hash(spec, value, general);
  }
}
