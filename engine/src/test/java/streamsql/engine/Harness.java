package streamsql.engine;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TwsTester;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * One operator run by Spark's in-memory harness for a {@link StatefulProcessor}
 * ({@link TwsTester}: the processor's state in memory, its timers fired by
 * {@link #watermark}), one key's rows per call as a micro-batch would hand them over.
 */
final class Harness {
  private final TwsTester<Row, Row, Row> tester;

  Harness(StatefulProcessor<Row, Row, Row> op, boolean eventTime) {
    tester = new TwsTester<>(op, CollectionConverters.asScala(new ArrayList<scala.Tuple2<Row, Object>>()).toList(),
        eventTime ? TimeMode.EventTime() : TimeMode.None(), OutputMode.Append(),
        // The harness drops rows at or before the watermark by this time; the planner's input
        // to these operators carries no event-time mark, so Spark drops none: neither here.
        eventTime ? Option.apply((scala.Function1<Row, Object>) row -> Long.MAX_VALUE) : Option.empty());
  }

  static Harness of(StatefulProcessor<Row, Row, Row> op) {
    return new Harness(op, false);
  }

  static Harness timed(StatefulProcessor<Row, Row, Row> op) {
    return new Harness(op, true);
  }

  /** One micro-batch of {@code key}'s rows: what the operator emits. */
  List<Row> batch(Row key, Row... rows) {
    return CollectionConverters.asJava(tester.test(key, CollectionConverters.asScala(Arrays.asList(rows)).toList()));
  }

  /** The watermark advances to {@code ms}: what the timers it passes emit. */
  List<Row> watermark(long ms) {
    return CollectionConverters.asJava(tester.setWatermark(ms));
  }

  /** A value state variable of {@code key} (null: none). */
  <T> T value(String name, Row key) {
    Option<T> v = tester.peekValueState(name, key);
    return v.isDefined() ? v.get() : null;
  }

  /** Sets a value state variable of {@code key}, as a state store restored from a checkpoint holds it. */
  <T> void setValue(String name, Row key, T value) {
    tester.updateValueState(name, key, value);
  }

  <K, V> java.util.Map<K, V> map(String name, Row key) {
    scala.collection.immutable.Map<K, V> m = tester.peekMapState(name, key);
    return CollectionConverters.asJava(m);
  }

  <T> List<T> list(String name, Row key) {
    scala.collection.immutable.List<T> l = tester.peekListState(name, key);
    return CollectionConverters.asJava(l);
  }

  /** Rows in a fixed order (an operator's output within a key has none to rely on). */
  static List<Row> sorted(List<Row> rows) {
    List<Row> out = new ArrayList<>(rows);
    out.sort(java.util.Comparator.comparing(Row::toString));
    return out;
  }

  static List<Row> sorted(Row... rows) {
    return sorted(Arrays.asList(rows));
  }

  static Row r(Object... values) {
    return RowFactory.create(values);
  }

  static StructType schema(String ddl) {
    return StructType.fromDDL(ddl);
  }
}
