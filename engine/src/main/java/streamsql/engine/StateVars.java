package streamsql.engine;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.catalyst.analysis.Analyzer;
import org.apache.spark.sql.catalyst.encoders.AgnosticEncoder;
import org.apache.spark.sql.catalyst.encoders.ExpressionEncoder;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.streaming.ListState;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.StatefulProcessorHandle;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The operators' state variables, declared with encoders that are built once per executor
 * thread instead of once per task.
 *
 * <p>Why: Spark builds a state variable's encoders anew every time an operator's task
 * opens it, which is every micro-batch for every shuffle partition: it runs the analyzer
 * over the value's deserializer ({@code resolveAndBind}) and generates the code of a
 * serializer and a deserializer projection (whose compiled classes are cached, but whose
 * source is written and canonicalized each time). For a small batch that is most of an
 * operator task's CPU: at 1,000 events/s on Kafka the seed count spent about a fifth of
 * its task threads' time there.
 *
 * <p>Why reusing them is safe: a serializer or deserializer is a single-threaded object
 * whose only state is its output buffer, and Spark already uses one per state variable
 * for every key of a task, each result consumed (written to or read from the store)
 * before the next call. The cache is per thread, so tasks running at the same time never
 * share one; a thread runs one task at a time, and within a task each state variable and
 * role (value, map key) has its own, as Spark's own encoders do. The key includes the
 * encoder's schema, so two queries, or two operators of one task, share one only when the
 * values have the same type, and then only one at a time. The resolved value encoder
 * (immutable) is shared by all threads. The caches hold one entry per state variable and
 * type the JVM has run, never freed: a job's queries are fixed, so that stays small.
 */
public final class StateVars {
  private StateVars() {}

  static <T> ValueState<T> value(StatefulProcessorHandle handle, String name, Encoder<T> value, TTLConfig ttl) {
    return handle.getValueState(name, reused(value, name + "/value"), ttl);
  }

  static <K, V> MapState<K, V> map(StatefulProcessorHandle handle, String name, Encoder<K> key, Encoder<V> value,
                                   TTLConfig ttl) {
    return handle.getMapState(name, reused(key, name + "/key"), reused(value, name + "/value"), ttl);
  }

  static <T> ListState<T> list(StatefulProcessorHandle handle, String name, Encoder<T> value, TTLConfig ttl) {
    return handle.getListState(name, reused(value, name + "/value"), ttl);
  }

  /** {@code encoder}, keeping what it builds per thread under {@code role} (a state
   *  variable's name and what it encodes there). Public for the tests. */
  @SuppressWarnings("unchecked")
  public static <T> Encoder<T> reused(Encoder<T> encoder, String role) {
    ExpressionEncoder<T> base = encoder instanceof ExpressionEncoder
        ? (ExpressionEncoder<T>) encoder
        : ExpressionEncoder.apply((AgnosticEncoder<T>) encoder);
    return new Reused<>(base, role + "|" + base.clsTag() + "|" + base.schema().json(), false);
  }

  private static final ThreadLocal<Map<String, Object>> PER_THREAD = ThreadLocal.withInitial(HashMap::new);
  private static final Map<String, ExpressionEncoder<?>> RESOLVED = new ConcurrentHashMap<>();

  /** An encoder whose serializer and deserializer are the thread's, made once per slot. */
  static final class Reused<T> extends ExpressionEncoder<T> {
    private final String slot;
    private final boolean resolved;

    Reused(ExpressionEncoder<T> base, String slot, boolean resolved) {
      super(base.encoder(), base.objSerializer(), base.objDeserializer());
      this.slot = slot;
      this.resolved = resolved;
    }

    @Override
    @SuppressWarnings("unchecked")
    public ExpressionEncoder.Serializer<T> createSerializer() {
      return (ExpressionEncoder.Serializer<T>) PER_THREAD.get()
          .computeIfAbsent(slot + "/serializer", k -> super.createSerializer());
    }

    @Override
    @SuppressWarnings("unchecked")
    public ExpressionEncoder.Deserializer<T> createDeserializer() {
      if (!resolved) {
        return super.createDeserializer();
      }
      return (ExpressionEncoder.Deserializer<T>) PER_THREAD.get()
          .computeIfAbsent(slot + "/deserializer", k -> super.createDeserializer());
    }

    /**
     * Resolving against the encoder's own schema (what the state store does) gives the same
     * bound deserializer every time: done once per JVM. Any other input is resolved anew.
     */
    @Override
    @SuppressWarnings("unchecked")
    public ExpressionEncoder<T> resolveAndBind(Seq<Attribute> attrs, Analyzer analyzer) {
      if (resolved || !ownSchema(attrs)) {
        return super.resolveAndBind(attrs, analyzer);
      }
      return (ExpressionEncoder<T>) RESOLVED.computeIfAbsent(
          slot, k -> new Reused<>(super.resolveAndBind(attrs, analyzer), slot, true));
    }

    private boolean ownSchema(Seq<Attribute> attrs) {
      StructType schema = schema();
      List<Attribute> given = CollectionConverters.asJava(attrs);
      if (given.size() != schema.size()) {
        return false;
      }
      for (int i = 0; i < given.size(); i++) {
        StructField field = schema.fields()[i];
        Attribute attr = given.get(i);
        if (!attr.name().equals(field.name()) || !attr.dataType().equals(field.dataType())
            || attr.nullable() != field.nullable()) {
          return false;
        }
      }
      return true;
    }
  }
}
