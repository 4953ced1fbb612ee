package streamsql.engine.formats;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.classic.ExpressionUtils;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A record in Confluent's wire format (magic byte 0, the writer schema's id as a 4-byte
 * big-endian int, one Avro datum) turned into one datum of the table's reader schema,
 * which spark-avro's {@code from_avro} then decodes (job/formats/avro_confluent.py).
 *
 * <p>The writer schema is fetched from the registry by id ({@code GET /schemas/ids/{id}})
 * once per executor JVM and registry, and resolved against the reader schema by Avro's
 * own schema resolution: a field the writer lacks takes the reader's default, a field the
 * reader lacks is skipped, as Flink's format reads. A datum whose writer schema is the
 * reader schema (or a union of null and it) is passed on as it is.
 *
 * <p>Returns {@code struct<datum binary, error string>}: a record without the header, of
 * an id the registry does not know, or that does not decode is an error (the table's
 * bad-record policy decides); a registry that cannot be reached fails the task, naming
 * the table and the registry's address without its credentials, so nothing is skipped.
 */
public final class ConfluentAvro extends Expression implements CodegenFallback, java.io.Serializable {
  private static final long serialVersionUID = 1L;
  private static final int TIMEOUT_MS = 30_000;
  // Writer schemas by "url|id": an id's schema never changes in a registry.
  private static final ConcurrentHashMap<String, Schema> WRITERS = new ConcurrentHashMap<>();
  // Resolving readers by writer and reader schema; GenericDatumReader is safe to share
  // between threads (its resolvers are kept per thread).
  private static final ConcurrentHashMap<String, GenericDatumReader<Object>> READERS = new ConcurrentHashMap<>();
  private static final StructType TYPE = new StructType(new StructField[] {
      DataTypes.createStructField("datum", DataTypes.BinaryType, true),
      DataTypes.createStructField("error", DataTypes.StringType, true)});

  /** A credential carried to the executors but never printed (plans, errors, logs). */
  public static final class Secret implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    final String value;

    public Secret(String value) {
      this.value = value;
    }

    @Override
    public String toString() {
      return value == null ? "none" : "****";
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Secret && Objects.equals(value, ((Secret) o).value);
    }

    @Override
    public int hashCode() {
      return Objects.hashCode(value);
    }
  }

  private final Expression value;
  private final String url;          // without credentials
  private final String readerSchema;
  private final String table;
  private final Secret authorization;  // the Authorization header's value, or null
  private final scala.collection.immutable.Seq<Expression> children;
  private transient Schema reader;

  public ConfluentAvro(Expression value, String url, String readerSchema, String table, Secret authorization) {
    this.value = value;
    this.url = url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
    this.readerSchema = readerSchema;
    this.table = table;
    this.authorization = authorization;
    this.children = scala.jdk.javaapi.CollectionConverters.asScala(java.util.List.of(value)).toList();
  }

  /**
   * {@code struct<datum, error>} of {@code value} (a binary column). {@code url}: the
   * registry without credentials; {@code authorization}: an Authorization header's value
   * or null; {@code table}: named in the error of an unreachable registry.
   */
  public static Column decode(Column value, String url, String readerSchema, String table, String authorization) {
    new Schema.Parser().parse(readerSchema);  // fail on the driver, not in a task
    return ExpressionUtils.column(new ConfluentAvro(ExpressionUtils.expression(value), url, readerSchema, table,
        new Secret(authorization)));
  }

  @Override
  public Object eval(InternalRow input) {
    Object v = value.eval(input);
    if (v == null) {
      return null;
    }
    byte[] bytes = (byte[]) v;
    if (bytes.length < 5 || bytes[0] != 0) {
      return error("the record is not in Confluent's wire format (magic byte 0 and a 4-byte schema id)");
    }
    int id = ((bytes[1] & 0xff) << 24) | ((bytes[2] & 0xff) << 16) | ((bytes[3] & 0xff) << 8) | (bytes[4] & 0xff);
    if (reader == null) {
      reader = new Schema.Parser().parse(readerSchema);
    }
    Schema writer = writer(id);
    if (writer == null) {
      return error("schema id " + id + " of the record is not in the schema registry at " + url);
    }
    if (writer.equals(reader)) {
      return datum(bytes, 5);
    }
    if (writer.getType() == Schema.Type.UNION && writer.getTypes().size() == 2
        && writer.getTypes().get(0).getType() == Schema.Type.NULL && writer.getTypes().get(1).equals(reader)
        && bytes.length > 5 && bytes[5] == 2) {
      return datum(bytes, 6);  // the union's second branch (index 1, zig-zag 2), then the record
    }
    try {
      String key = id + "|" + url + "|" + readerSchema;
      GenericDatumReader<Object> resolving = READERS.computeIfAbsent(key, k -> new GenericDatumReader<>(writer, reader));
      var decoder = DecoderFactory.get().binaryDecoder(bytes, 5, bytes.length - 5, null);
      Object record = resolving.read(null, decoder);
      if (!decoder.isEnd()) {
        return error("the record has bytes after its Avro datum (schema id " + id + ")");
      }
      ByteArrayOutputStream out = new ByteArrayOutputStream(bytes.length);
      BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
      new GenericDatumWriter<Object>(reader).write(record, encoder);
      encoder.flush();
      return new GenericInternalRow(new Object[] {out.toByteArray(), null});
    } catch (IOException | RuntimeException e) {
      return error("the record does not decode with its writer schema (id " + id + ") into the table's schema: "
          + e.getMessage());
    }
  }

  private static InternalRow datum(byte[] bytes, int from) {
    return new GenericInternalRow(new Object[] {java.util.Arrays.copyOfRange(bytes, from, bytes.length), null});
  }

  private static InternalRow error(String message) {
    return new GenericInternalRow(new Object[] {null, UTF8String.fromString(message)});
  }

  /** The writer schema of {@code id}, or null when the registry has no such id. */
  private Schema writer(int id) {
    String key = url + "|" + id;
    Schema found = WRITERS.get(key);
    if (found != null) {
      return found;
    }
    String body;
    try {
      body = get(url + "/schemas/ids/" + id);
    } catch (RefusedException e) {
      throw new IllegalStateException("table '" + table + "': the schema registry at " + url + " answered HTTP "
          + e.status + " to the request for schema id " + id + (e.status == 401 || e.status == 403
          ? " (check the format's 'basic-auth.user-info' option: 'avro-confluent.…' or "
            + "'debezium-avro-confluent.…')" : ""));
    } catch (IOException e) {
      throw new IllegalStateException("table '" + table + "': the schema registry at " + url
          + " cannot be reached to fetch schema id " + id + ": " + e.getMessage());
    }
    if (body == null) {
      return null;
    }
    try {
      String text = new com.fasterxml.jackson.databind.ObjectMapper().readTree(body).get("schema").asText();
      found = new Schema.Parser().setValidateDefaults(false).parse(text);
    } catch (IOException | RuntimeException e) {
      throw new IllegalStateException("table '" + table + "': the schema registry at " + url
          + " answered schema id " + id + " with no Avro schema: " + e.getMessage());
    }
    WRITERS.put(key, found);
    return found;
  }

  /** The registry answered, with a status other than 200 or 404. */
  private static final class RefusedException extends IOException {
    private static final long serialVersionUID = 1L;
    final int status;

    RefusedException(int status) {
      super("HTTP " + status);
      this.status = status;
    }
  }

  /** The body of a GET, or null for 404. */
  private String get(String address) throws IOException {
    HttpURLConnection c = (HttpURLConnection) URI.create(address).toURL().openConnection();
    c.setConnectTimeout(TIMEOUT_MS);
    c.setReadTimeout(TIMEOUT_MS);
    c.setRequestProperty("Accept", "application/vnd.schemaregistry.v1+json, application/json");
    if (authorization.value != null) {
      c.setRequestProperty("Authorization", authorization.value);
    }
    int status = c.getResponseCode();
    if (status == 404) {
      return null;
    }
    if (status != 200) {
      throw new RefusedException(status);
    }
    try (InputStream in = c.getInputStream()) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Override
  public scala.collection.immutable.Seq<Expression> children() {
    return children;
  }

  @Override
  public DataType dataType() {
    return TYPE;
  }

  @Override
  public boolean nullable() {
    return true;
  }

  // Nondeterministic for the reason FastJson gives: the decoding stays in one projection.
  @Override
  public boolean deterministic() {
    return false;
  }

  @Override
  public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
    return CodegenFallback.super.doGenCode(ctx, ev);
  }

  @Override
  public Expression withNewChildrenInternal(scala.collection.immutable.IndexedSeq<Expression> newChildren) {
    return new ConfluentAvro(newChildren.apply(0), url, readerSchema, table, authorization);
  }

  @Override
  public String prettyName() {
    return "confluent_avro";
  }

  @Override
  public int productArity() {
    return 5;
  }

  @Override
  public Object productElement(int n) {
    switch (n) {
      case 0:
        return value;
      case 1:
        return url;
      case 2:
        return readerSchema;
      case 3:
        return table;
      case 4:
        return authorization;
      default:
        throw new IndexOutOfBoundsException(String.valueOf(n));
    }
  }

  @Override
  public boolean canEqual(Object that) {
    return that instanceof ConfluentAvro;
  }

  @Override
  public boolean equals(Object that) {
    if (!(that instanceof ConfluentAvro)) {
      return false;
    }
    ConfluentAvro o = (ConfluentAvro) that;
    return url.equals(o.url) && readerSchema.equals(o.readerSchema) && table.equals(o.table)
        && authorization.equals(o.authorization) && value.equals(o.value);
  }

  @Override
  public int hashCode() {
    return Objects.hash(url, readerSchema, table, value);
  }
}
