package streamsql.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * An operator's specification as the planner writes it (a JSON object), read on the
 * driver into plain values that travel to the executors with the operator.
 */
final class Spec {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final JsonNode node;

  private Spec(JsonNode node) {
    this.node = node;
  }

  static Spec parse(String text) {
    try {
      return new Spec(JSON.readTree(text));
    } catch (IOException e) {
      throw new UncheckedIOException("malformed operator specification: " + text, e);
    }
  }

  Spec get(String field) {
    JsonNode child = node.get(field);
    if (child == null) {
      throw new IllegalArgumentException("operator specification lacks '" + field + "': " + node);
    }
    return new Spec(child);
  }

  boolean has(String field) {
    return node.hasNonNull(field);
  }

  String text(String field) {
    return get(field).node.asText();
  }

  String text(String field, String otherwise) {
    return has(field) ? text(field) : otherwise;
  }

  long number(String field, long otherwise) {
    return has(field) ? node.get(field).asLong() : otherwise;
  }

  boolean flag(String field) {
    return has(field) && node.get(field).asBoolean();
  }

  List<Spec> list(String field) {
    List<Spec> out = new ArrayList<>();
    if (has(field)) {
      for (JsonNode item : node.get(field)) {
        out.add(new Spec(item));
      }
    }
    return out;
  }

  List<String> strings(String field) {
    List<String> out = new ArrayList<>();
    if (has(field)) {
      for (JsonNode item : node.get(field)) {
        out.add(item.asText());
      }
    }
    return out;
  }

  boolean[] flags(String field) {
    List<Spec> items = list(field);
    boolean[] out = new boolean[items.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = items.get(i).node.asBoolean();
    }
    return out;
  }

  DataType type(String field) {
    return DataType.fromJson(get(field).node.toString());
  }

  // ------------------------------------------------------------------ schemas

  /** Positions of the named columns in a schema. */
  static int[] indices(StructType schema, List<String> names) {
    int[] out = new int[names.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = schema.fieldIndex(names.get(i));
    }
    return out;
  }

  /** The sub-schema of the named columns, all nullable. */
  static StructType select(StructType schema, List<String> names) {
    StructType out = new StructType();
    for (String name : names) {
      StructField f = schema.apply(name);
      out = out.add(f.name(), f.dataType(), true);
    }
    return out;
  }

  static StructType concat(StructType... parts) {
    StructType out = new StructType();
    for (StructType part : parts) {
      for (StructField f : part.fields()) {
        out = out.add(f.name(), f.dataType(), true);
      }
    }
    return out;
  }
}
