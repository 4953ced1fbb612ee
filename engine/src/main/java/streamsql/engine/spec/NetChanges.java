package streamsql.engine.spec;

import java.util.List;

/** A batch's changes netted per sink key (no state): the sink's primary key and columns. */
public record NetChanges(List<String> keys, List<String> row) implements java.io.Serializable {}
