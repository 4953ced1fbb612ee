package streamsql.engine.spec;

/**
 * A parameter or result of an {@code eval} method: its Java class name and its
 * {@code @DataTypeHint} type text ("" for a hint without one, null for no hint).
 */
public record JavaValue(String className, String hint) implements java.io.Serializable {}
