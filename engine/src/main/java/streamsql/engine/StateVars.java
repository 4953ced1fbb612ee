package streamsql.engine;

import java.util.IdentityHashMap;
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
 * role (value, map key) has its own, as Spark's own encoders do. The encoder itself is
 * one per role and type (Spark's encoders are values), so two queries, or two operators
 * of one task, share one only when the values have the same type, and then only one at a
 * time. The encoders, and each one's value encoder resolved against its own schema, are
 * immutable and shared by all threads. The caches hold one entry per state variable and
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
   *  variable's name and what it encodes there): one per role and type in the JVM, so that
   *  a task does not even build the encoder. Public for the tests. */
  @SuppressWarnings("unchecked")
  public static <T> Encoder<T> reused(Encoder<T> encoder, String role) {
    return (Encoder<T>) BY_ROLE.computeIfAbsent(List.of(role, encoder), k -> new Reused<>(
        encoder instanceof ExpressionEncoder
            ? (ExpressionEncoder<T>) encoder
            : ExpressionEncoder.apply((AgnosticEncoder<T>) encoder), false));
  }

  /** Spark's encoders are values (equal when they encode the same type the same way). */
  private static final Map<List<Object>, Reused<?>> BY_ROLE = new ConcurrentHashMap<>();
  /** Each thread's serializers and deserializers, by the encoder that made them. */
  private static final ThreadLocal<Map<Object, Object>> SERIALIZERS = ThreadLocal.withInitial(IdentityHashMap::new);
  private static final ThreadLocal<Map<Object, Object>> DESERIALIZERS = ThreadLocal.withInitial(IdentityHashMap::new);

  /** An encoder whose serializer and deserializer are the thread's, made once. */
  static final class Reused<T> extends ExpressionEncoder<T> {
    private final boolean resolved;
    private volatile Reused<T> resolvedByItsSchema;

    Reused(ExpressionEncoder<T> base, boolean resolved) {
      super(base.encoder(), base.objSerializer(), base.objDeserializer());
      this.resolved = resolved;
    }

    @Override
    @SuppressWarnings("unchecked")
    public ExpressionEncoder.Serializer<T> createSerializer() {
      return (ExpressionEncoder.Serializer<T>) SERIALIZERS.get().computeIfAbsent(this, k -> super.createSerializer());
    }

    @Override
    @SuppressWarnings("unchecked")
    public ExpressionEncoder.Deserializer<T> createDeserializer() {
      if (!resolved) {
        return super.createDeserializer();
      }
      return (ExpressionEncoder.Deserializer<T>) DESERIALIZERS.get().computeIfAbsent(this, k -> super.createDeserializer());
    }

    /**
     * Resolving against the encoder's own schema (what the state store does) gives the same
     * bound deserializer every time: done once per JVM. Any other input is resolved anew.
     */
    @Override
    public ExpressionEncoder<T> resolveAndBind(Seq<Attribute> attrs, Analyzer analyzer) {
      if (resolved || !ownSchema(attrs)) {
        return super.resolveAndBind(attrs, analyzer);
      }
      Reused<T> bound = resolvedByItsSchema;
      if (bound == null) {  // two threads may both resolve; either result is the same
        bound = new Reused<>(super.resolveAndBind(attrs, analyzer), true);
        resolvedByItsSchema = bound;
      }
      return bound;
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
