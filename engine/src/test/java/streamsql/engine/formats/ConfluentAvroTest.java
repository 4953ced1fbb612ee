package streamsql.engine.formats;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * ConfluentAvro on records built here, against a registry served in the test on a free
 * loopback port (the class fetches schemas over HTTP, so a real socket, no network).
 */
class ConfluentAvroTest {
  static final Schema READER = new Schema.Parser().parse("{\"type\": \"record\", \"name\": \"Order\", \"fields\": ["
      + "{\"name\": \"id\", \"type\": \"int\"},"
      + "{\"name\": \"score\", \"type\": [\"null\", \"double\"], \"default\": null}]}");
  // An older writer: a field the reader lacks ('dropped'), none of the reader's 'score'.
  static final Schema OLD = new Schema.Parser().parse("{\"type\": \"record\", \"name\": \"Order\", \"fields\": ["
      + "{\"name\": \"id\", \"type\": \"int\"},"
      + "{\"name\": \"dropped\", \"type\": \"string\"}]}");

  HttpServer server;
  final Map<Integer, String> schemas = new ConcurrentHashMap<>();
  final AtomicInteger fetches = new AtomicInteger();
  volatile int status = 200;  // what the registry answers a known id with
  String url;

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/schemas/ids/", exchange -> {
      fetches.incrementAndGet();
      String[] path = exchange.getRequestURI().getPath().split("/");
      String schema = schemas.get(Integer.parseInt(path[path.length - 1]));
      int code = schema == null ? 404 : status;
      byte[] body = (code == 200 ? "{\"schema\": " + quote(schema) + "}" : "{\"error_code\": " + code + "}")
          .getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(code, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    server.start();
    // Each test its own port, so the class's per-JVM cache (by url and id) starts empty.
    url = "http://127.0.0.1:" + server.getAddress().getPort() + "/";
    schemas.put(1, READER.toString());
    schemas.put(2, OLD.toString());
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  static String quote(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  ConfluentAvro expression() {
    return new ConfluentAvro(new BoundReference(0, DataTypes.BinaryType, true), url, READER.toString(), "t",
        new ConfluentAvro.Secret(null));
  }

  static byte[] record(int id, Schema schema, GenericRecord datum) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(0);
    out.write(ByteBuffer.allocate(4).putInt(id).array());
    BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
    new GenericDatumWriter<GenericRecord>(schema).write(datum, encoder);
    encoder.flush();
    return out.toByteArray();
  }

  static InternalRow eval(ConfluentAvro e, byte[] bytes) {
    return (InternalRow) e.eval(new GenericInternalRow(new Object[] {bytes}));
  }

  static GenericRecord readerDatum(InternalRow result) throws IOException {
    assertTrue(result.isNullAt(1), () -> "unexpected error: " + result.getUTF8String(1));
    byte[] datum = result.getBinary(0);
    return new GenericDatumReader<GenericRecord>(READER).read(null,
        DecoderFactory.get().binaryDecoder(datum, null));
  }

  static String error(InternalRow result) {
    assertTrue(result.isNullAt(0));
    return result.getUTF8String(1).toString();
  }

  @Test
  void aRecordOfTheReaderSchemaIsPassedOnAsItIs() throws IOException {
    GenericRecord order = new GenericData.Record(READER);
    order.put("id", 7);
    order.put("score", 2.5);
    byte[] bytes = record(1, READER, order);
    InternalRow result = eval(expression(), bytes);
    assertArrayEquals(java.util.Arrays.copyOfRange(bytes, 5, bytes.length), result.getBinary(0));
    GenericRecord back = readerDatum(result);
    assertEquals(7, back.get("id"));
    assertEquals(2.5, back.get("score"));
  }

  @Test
  void headerIsParsedBigEndianAndCheckedForTheMagicByte() throws IOException {
    // Id 258 = bytes 0, 0, 1, 2: read big-endian, so the registry is asked for 258.
    GenericRecord order = new GenericData.Record(READER);
    order.put("id", 1);
    schemas.put(258, READER.toString());
    assertEquals(1, readerDatum(eval(expression(), record(258, READER, order))).get("id"));
    assertEquals(1, fetches.get());

    byte[] wrongMagic = record(1, READER, order);
    wrongMagic[0] = 1;
    assertTrue(error(eval(expression(), wrongMagic)).contains("not in Confluent's wire format"));
    assertTrue(error(eval(expression(), new byte[] {0, 0, 0, 1})).contains("not in Confluent's wire format"));
    assertNull(expression().eval(new GenericInternalRow(new Object[] {null})));  // a NULL value stays NULL
    assertEquals(1, fetches.get());  // a record without the header asks the registry nothing
  }

  @Test
  void eachIdIsFetchedOncePerRegistry() throws IOException {
    GenericRecord order = new GenericData.Record(READER);
    order.put("id", 1);
    GenericRecord old = new GenericData.Record(OLD);
    old.put("id", 2);
    old.put("dropped", "x");
    ConfluentAvro a = expression();
    ConfluentAvro b = expression();  // another task's copy: the cache is the JVM's, not the instance's
    for (int i = 0; i < 3; i++) {
      readerDatum(eval(a, record(1, READER, order)));
      readerDatum(eval(b, record(2, OLD, old)));
    }
    assertEquals(2, fetches.get());
  }

  @Test
  void anEvolvedWriterSchemaResolvesToTheReaderSchema() throws IOException {
    GenericRecord old = new GenericData.Record(OLD);
    old.put("id", 5);
    old.put("dropped", "gone");
    GenericRecord back = readerDatum(eval(expression(), record(2, OLD, old)));
    assertEquals(5, back.get("id"));
    assertNull(back.get("score"));  // the writer lacks it: the reader's default
    assertNull(back.getSchema().getField("dropped"));  // the reader lacks it: skipped
  }

  @Test
  void badRecordsAreErrorsNotExceptions() throws IOException {
    GenericRecord old = new GenericData.Record(OLD);
    old.put("id", 5);
    old.put("dropped", "gone");
    byte[] whole = record(2, OLD, old);
    // Cut inside the string: the datum does not decode with its writer schema.
    String cut = error(eval(expression(), java.util.Arrays.copyOf(whole, whole.length - 2)));
    assertTrue(cut.contains("does not decode with its writer schema (id 2)"), cut);
    // Bytes left over after the datum.
    byte[] longer = java.util.Arrays.copyOf(whole, whole.length + 1);
    assertTrue(error(eval(expression(), longer)).contains("bytes after its Avro datum"));
    // An id the registry does not have (404): an error naming the id, for 'on-error' to decide.
    byte[] unknown = record(99, OLD, old);
    assertTrue(error(eval(expression(), unknown)).contains("schema id 99 of the record is not in the schema registry"));
  }

  @Test
  void aRegistryRefusingTheFetchFailsNamingTableAndId() throws IOException {
    status = 401;
    GenericRecord order = new GenericData.Record(READER);
    order.put("id", 1);
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> eval(expression(), record(1, READER, order)));
    assertTrue(e.getMessage().contains("table 't'") && e.getMessage().contains("HTTP 401")
        && e.getMessage().contains("schema id 1"), e.getMessage());
  }
}
