package streamsql.engine;

import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import scala.collection.Iterator;

/**
 * Flink's {@code CURRENT_WATERMARK(rowtime)}: every row with the watermark the rows
 * before it have made (NULL before the first), as Flink's watermark assigner computes
 * it with one reader: the largest event time seen so far minus the table's delay. All
 * rows pass one key in arrival order (Flink runs a table's reader and its watermark
 * assigner as one sequence too); the largest event time is kept in state across
 * micro-batches.
 */
final class WatermarkOp extends StatefulProcessor<Row, Row, Row> {
  private final int rowtimeAt;
  private final long delayMillis;
  private final boolean local;   // TIMESTAMP (wall clock) rather than TIMESTAMP_LTZ (instant)
  private transient ValueState<Long> largest;

  WatermarkOp(int rowtimeAt, long delayMillis, boolean local) {
    this.rowtimeAt = rowtimeAt;
    this.delayMillis = delayMillis;
    this.local = local;
  }

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    largest = StateVars.value(getHandle(), "largest", Encoders.LONG(), TTLConfig.NONE());
  }

  @Override
  public Iterator<Row> handleInputRows(Row key, Iterator<Row> rows, TimerValues timerValues) {
    java.util.List<Row> out = new java.util.ArrayList<>();
    Long max = largest.get();
    while (rows.hasNext()) {
      Row r = rows.next();
      Object[] v = new Object[r.length() + 1];
      for (int i = 0; i < r.length(); i++) {
        v[i] = r.get(i);
      }
      v[r.length()] = max == null ? null : value(max - delayMillis);
      Long time = millis(r.get(rowtimeAt));
      if (time != null && (max == null || time > max)) {
        max = time;
      }
      out.add(Operator.row(v));
    }
    if (max != null) {
      largest.update(max);
    }
    return scala.jdk.javaapi.CollectionConverters.asScala(out.iterator());
  }

  /** {@code ms} as the external value of the column's type (java.time off: Timestamp). */
  private Object value(long ms) {
    return local ? LocalDateTime.ofEpochSecond(Math.floorDiv(ms, 1000), (int) Math.floorMod(ms, 1000) * 1_000_000,
                                               ZoneOffset.UTC)
                 : new Timestamp(ms);
  }

  private static Long millis(Object t) {
    if (t == null) {
      return null;
    }
    if (t instanceof LocalDateTime) {
      return ((LocalDateTime) t).toInstant(ZoneOffset.UTC).toEpochMilli();
    }
    if (t instanceof Instant) {
      return ((Instant) t).toEpochMilli();
    }
    return ((Timestamp) t).getTime();
  }
}
