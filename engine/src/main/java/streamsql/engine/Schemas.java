package streamsql.engine;

import java.util.List;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/** The sub-schemas an operator reads and writes, by column name. */
final class Schemas {
  private Schemas() {}

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
