package streamsql.engine.spec;

/**
 * One event of the session's streaming queries as {@link streamsql.engine.ProgressQueue}
 * hands it to the progress reporter (job/run/progress.py reads it into
 * job/changelog/replies.py's dataclass of the same name).
 *
 * <p>{@code kind}: "started", "progress", "terminated", or "closed" (the queue stopped
 * listening: nothing more comes). {@code id}: the query's id, {@code name} its name (null
 * when unnamed or not told). {@code progress}: on "progress" only, Spark's own
 * {@code StreamingQueryProgress.json()}, whose fields are Spark's documented ones, not ours.
 */
public record QueryEvent(String kind, String id, String name, String progress) implements java.io.Serializable {}
