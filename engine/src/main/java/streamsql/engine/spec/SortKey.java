package streamsql.engine.spec;

/** One ORDER BY key of a Top-N (job/changelog/specs.py: SortKey). */
public record SortKey(String column, boolean descending, boolean nullsFirst) implements java.io.Serializable {}
