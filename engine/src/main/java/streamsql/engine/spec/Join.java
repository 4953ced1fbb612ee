package streamsql.engine.spec;

import java.util.List;

/** A regular join of two or more inputs on one key: the key parts, the sides, state TTL (ms). */
public record Join(List<String> keys, List<JoinSide> sides, long stateTtlMs) implements java.io.Serializable {}
