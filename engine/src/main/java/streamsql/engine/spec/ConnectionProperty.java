package streamsql.engine.spec;

/** One JDBC connection property of a lookup join; its value may be a secret (never printed). */
public record ConnectionProperty(String name, String value) implements java.io.Serializable {
  @Override
  public String toString() {
    return "ConnectionProperty[name=" + name + "]";
  }
}
