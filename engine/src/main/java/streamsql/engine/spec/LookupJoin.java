package streamsql.engine.spec;

import java.util.List;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * Lookup join against a database table: JDBC URL, driver class (null: by the URL),
 * connection properties, the table, its columns (as the database names them), their Spark
 * types (a struct, Spark's type JSON), the key's positions among them, the input columns
 * holding the key, the input columns passed on, LEFT JOIN, keys per query.
 */
public record LookupJoin(String url, String driver, List<ConnectionProperty> properties, String table,
                         List<String> columns, String columnTypes, List<Integer> keyColumns, List<String> keys,
                         List<String> passed, boolean leftOuter, long chunk) implements java.io.Serializable {
  public StructType columnStruct() {
    return (StructType) DataType.fromJson(columnTypes);
  }

  @Override
  public String toString() {  // the URL and the properties may hold credentials
    return "LookupJoin[table=" + table + ", columns=" + columns + "]";
  }
}
