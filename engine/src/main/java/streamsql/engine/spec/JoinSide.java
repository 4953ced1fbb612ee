package streamsql.engine.spec;

import java.util.List;

/**
 * One input of a regular join (job/changelog/specs.py: JoinSide): its columns; padded (an
 * outer side: NULLs while nothing matches); upsert (raw upserts normalized by the join);
 * unique (at most one row per join key); passes_null_key (rows with a NULL key are emitted
 * padded at once).
 */
public record JoinSide(List<String> columns, boolean padded, boolean upsert, boolean unique, boolean passesNullKey)
    implements java.io.Serializable {}
