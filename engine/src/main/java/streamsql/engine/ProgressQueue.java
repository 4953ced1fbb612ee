package streamsql.engine;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import streamsql.engine.spec.QueryEvent;
import streamsql.engine.spec.Specs;

/**
 * The session's streaming query events, queued in the JVM for the job's progress reporter
 * (job/run/progress.py) to take one at a time, each a {@link QueryEvent} as JSON.
 *
 * <p>A Python {@code StreamingQueryListener} is called back through py4j on Spark's listener
 * thread, and PySpark then rebuilds the progress object with dozens of calls back into the
 * JVM, each of which looks classes up by name in every jar: about 50 ms of CPU per
 * micro-batch. Here each event costs one JSON rendering, and the reporter one call to take
 * it. Events are queued in the order Spark's listener bus delivers them, which keeps a
 * query's batches before its end.
 */
public final class ProgressQueue extends StreamingQueryListener {
  private final LinkedBlockingQueue<String> events = new LinkedBlockingQueue<>();
  private final SparkSession spark;

  private ProgressQueue(SparkSession spark) {
    this.spark = spark;
  }

  /** A queue listening to the session's streaming queries from now on. */
  public static ProgressQueue register(SparkSession spark) {
    ProgressQueue queue = new ProgressQueue(spark);
    spark.streams().addListener(queue);
    return queue;
  }

  /** Stops listening; the reporter's next {@link #poll} returns a "closed" event at once
   *  (after any events still queued), so a run does not wait out a poll's timeout to end. */
  public void unregister() {
    spark.streams().removeListener(this);
    events.add(Specs.write(closed()));
  }

  /** The next event ({@link QueryEvent} as JSON), or null when none came within {@code timeoutMs}. */
  public String poll(long timeoutMs) throws InterruptedException {
    return events.poll(timeoutMs, TimeUnit.MILLISECONDS);
  }

  @Override
  public void onQueryStarted(QueryStartedEvent event) {
    events.add(Specs.write(started(event)));
  }

  @Override
  public void onQueryProgress(QueryProgressEvent event) {
    events.add(Specs.write(progress(event)));
  }

  @Override
  public void onQueryTerminated(QueryTerminatedEvent event) {
    events.add(Specs.write(terminated(event)));
  }

  static QueryEvent started(QueryStartedEvent event) {
    return new QueryEvent("started", event.id().toString(), event.name(), null);
  }

  static QueryEvent progress(QueryProgressEvent event) {
    return new QueryEvent("progress", event.progress().id().toString(), event.progress().name(),
        event.progress().json());
  }

  static QueryEvent terminated(QueryTerminatedEvent event) {
    return new QueryEvent("terminated", event.id().toString(), null, null);
  }

  static QueryEvent closed() {
    return new QueryEvent("closed", null, null, null);
  }
}
