package streamsql.engine.grouping;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.types.StructType;
import scala.collection.immutable.Seq;

/**
 * The reductions' projections, kept per executor thread across tasks and micro-batches.
 * Each task of each batch deserializes its own copy of a reduction, and generating a
 * projection's code (then finding the compiled class in Spark's cache) takes
 * milliseconds: a running query's small batch paid more for its reductions' projections
 * than for reducing its rows (the 3-way join at 10,000 events/s: six reading tasks a
 * batch, each making two).
 *
 * <p>A projection writes its result into one row of its own, so it serves one reduction
 * at a time: {@link #take} removes it from the thread's kept ones, and the reduction
 * gives it back when its rows are all passed on. A task that fails keeps it, and the
 * next one makes a new one.
 */
final class Projections {
  private Projections() {}

  private static final int KEPT = 32;  // per thread, the most recently given back
  private static final ThreadLocal<Map<String, UnsafeProjection>> KEPT_HERE =
      ThreadLocal.withInitial(() -> new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, UnsafeProjection> eldest) {
          return size() > KEPT;
        }
      });

  /** The thread's kept projection of this text (what it computes, from what), or a new one. */
  static UnsafeProjection take(String text, Supplier<UnsafeProjection> make) {
    UnsafeProjection kept = KEPT_HERE.get().remove(text);
    return kept != null ? kept : make.get();
  }

  static void giveBack(String text, UnsafeProjection projection) {
    KEPT_HERE.get().put(text, projection);
  }

  /**
   * A table made with the thread's projections of the rows' key ({@code keys} of {@code
   * input}) and of whole rows, given back when it is drained.
   */
  static KeyTable keyed(Seq<Expression> keys, Seq<Attribute> input, StructType schema,
                        BiFunction<UnsafeProjection, UnsafeProjection, KeyTable> table) {
    String keyText = "key " + keys + " of " + input;
    UnsafeProjection keyOf = take(keyText, () -> UnsafeProjection.create(keys, input));
    return rows(schema, toUnsafe -> table.apply(keyOf, toUnsafe)).whenDrained(() -> giveBack(keyText, keyOf));
  }

  /** A table made with the thread's projection of whole rows, given back when it is drained. */
  static KeyTable rows(StructType schema, Function<UnsafeProjection, KeyTable> table) {
    String rowText = "row " + schema.catalogString();
    UnsafeProjection toUnsafe = take(rowText, () -> UnsafeProjection.create(schema));
    return table.apply(toUnsafe).whenDrained(() -> giveBack(rowText, toUnsafe));
  }
}
