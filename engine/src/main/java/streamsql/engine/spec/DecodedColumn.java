package streamsql.engine.spec;

/**
 * One column the fast JSON decoder reads: its field name and Spark's name of its type
 * (string, byte, short, integer, long, float, double, boolean or decimal(p,s)).
 */
public record DecodedColumn(String name, String kind) implements java.io.Serializable {}
