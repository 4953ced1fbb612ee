package streamsql.engine;

import java.io.Serializable;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Properties;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * A lookup join (Flink's {@code JOIN dim FOR SYSTEM_TIME AS OF o.proc_time}): each input
 * row is joined with the rows the database table holds, for its key, when the row is
 * processed. Stateless: a task reads its rows in chunks and looks each chunk's distinct
 * keys up with one query ({@code WHERE (k1, k2) IN ((?, ?), …)}); an INNER join drops a
 * row nothing matches, a LEFT join pads it with NULLs.
 *
 * <p>Correctness: the output for a row depends only on the row and the table's rows with
 * its key at the moment of the query, which is what a processing-time lookup means; a
 * NULL key part matches nothing (SQL equality), so such rows are never looked up.
 * Database values are converted to the declared column types before keys are compared.
 */
final class LookupJoin implements Serializable {
  private final String url;
  private final String driver;
  private final Properties properties;
  private final String table;
  private final List<String> columns;      // database column names, as the query writes them
  private final StructType columnTypes;    // the declared types of those columns
  private final int[] keyColumns;          // positions in columns of the key columns
  private final int[] keyAt;               // positions in the input of the row's key values
  private final int[] passAt;              // input columns passed on
  private final boolean leftOuter;
  private final int chunk;

  LookupJoin(String url, String driver, Properties properties, String table, List<String> columns,
             StructType columnTypes, int[] keyColumns, int[] keyAt, int[] passAt, boolean leftOuter, int chunk) {
    this.url = url;
    this.driver = driver;
    this.properties = properties;
    this.table = table;
    this.columns = columns;
    this.columnTypes = columnTypes;
    this.keyColumns = keyColumns;
    this.keyAt = keyAt;
    this.passAt = passAt;
    this.leftOuter = leftOuter;
    this.chunk = chunk;
  }

  Iterator<Row> apply(Iterator<Row> input) {
    return new Iterator<Row>() {
      private Connection connection;
      private Iterator<Row> ready = java.util.Collections.emptyIterator();

      @Override
      public boolean hasNext() {
        while (!ready.hasNext() && input.hasNext()) {
          List<Row> rows = new ArrayList<>(chunk);
          while (rows.size() < chunk && input.hasNext()) {
            rows.add(input.next());
          }
          ready = join(rows).iterator();
        }
        if (!ready.hasNext() && connection != null) {
          try {
            connection.close();
          } catch (SQLException ignored) {
            // the task is done with it either way
          }
          connection = null;
        }
        return ready.hasNext();
      }

      @Override
      public Row next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        return ready.next();
      }

      private List<Row> join(List<Row> rows) {
        LinkedHashSet<List<Object>> keys = new LinkedHashSet<>();
        for (Row r : rows) {
          List<Object> k = key(r);
          if (k != null) {
            keys.add(k);
          }
        }
        Map<List<Object>, List<Object[]>> found = keys.isEmpty() ? new HashMap<>() : lookup(keys);
        List<Row> out = new ArrayList<>();
        for (Row r : rows) {
          List<Object> k = key(r);
          List<Object[]> matches = k == null ? null : found.get(k);
          if (matches != null) {
            for (Object[] m : matches) {
              out.add(joined(r, m));
            }
          } else if (leftOuter) {
            out.add(joined(r, null));
          }
        }
        return out;
      }

      private Map<List<Object>, List<Object[]>> lookup(LinkedHashSet<List<Object>> keys) {
        StringBuilder sql = new StringBuilder("SELECT ");
        for (int i = 0; i < columns.size(); i++) {
          sql.append(i == 0 ? "" : ", ").append(columns.get(i));
        }
        sql.append(" FROM ").append(table).append(" WHERE ");
        String tuple = keyColumns.length == 1 ? "?" : "(" + String.join(", ", java.util.Collections.nCopies(
            keyColumns.length, "?")) + ")";
        if (keyColumns.length == 1) {
          sql.append(columns.get(keyColumns[0]));
        } else {
          sql.append("(");
          for (int i = 0; i < keyColumns.length; i++) {
            sql.append(i == 0 ? "" : ", ").append(columns.get(keyColumns[i]));
          }
          sql.append(")");
        }
        sql.append(" IN (").append(String.join(", ", java.util.Collections.nCopies(keys.size(), tuple))).append(")");
        Map<List<Object>, List<Object[]>> found = new HashMap<>();
        try {
          if (connection == null) {
            if (driver != null) {
              Class.forName(driver);
            }
            connection = DriverManager.getConnection(url, properties);
          }
          try (PreparedStatement statement = connection.prepareStatement(sql.toString())) {
            int at = 1;
            for (List<Object> k : keys) {
              for (Object v : k) {
                statement.setObject(at++, v instanceof java.time.LocalDateTime
                    ? java.sql.Timestamp.valueOf((java.time.LocalDateTime) v) : v);
              }
            }
            try (ResultSet rs = statement.executeQuery()) {
              while (rs.next()) {
                Object[] values = new Object[columns.size()];
                for (int i = 0; i < values.length; i++) {
                  values[i] = read(rs, i + 1, columnTypes.fields()[i].dataType());
                }
                Object[] k = new Object[keyColumns.length];
                for (int i = 0; i < k.length; i++) {
                  k[i] = values[keyColumns[i]];
                }
                found.computeIfAbsent(Arrays.asList(k), x -> new ArrayList<>()).add(values);
              }
            }
          }
        } catch (SQLException | ClassNotFoundException e) {
          throw new IllegalStateException("lookup join: querying table " + table + " failed: " + e.getMessage(), e);
        }
        return found;
      }
    };
  }

  private List<Object> key(Row r) {
    Object[] k = new Object[keyAt.length];
    for (int i = 0; i < k.length; i++) {
      if (r.isNullAt(keyAt[i])) {
        return null;
      }
      k[i] = r.get(keyAt[i]);
    }
    return Arrays.asList(k);
  }

  private Row joined(Row r, Object[] match) {
    Object[] v = new Object[passAt.length + columns.size()];
    for (int i = 0; i < passAt.length; i++) {
      v[i] = r.get(passAt[i]);
    }
    for (int i = 0; i < columns.size(); i++) {
      v[passAt.length + i] = match == null ? null : match[i];
    }
    return RowFactory.create(v);
  }

  /** A database value as Spark's external value of the declared type. */
  static Object read(ResultSet rs, int at, DataType type) throws SQLException {
    Object v;
    if (type instanceof IntegerType) {
      v = rs.getInt(at);
    } else if (type instanceof LongType) {
      v = rs.getLong(at);
    } else if (type instanceof ShortType) {
      v = rs.getShort(at);
    } else if (type instanceof ByteType) {
      v = rs.getByte(at);
    } else if (type instanceof DoubleType) {
      v = rs.getDouble(at);
    } else if (type instanceof FloatType) {
      v = rs.getFloat(at);
    } else if (type instanceof BooleanType) {
      v = rs.getBoolean(at);
    } else if (type instanceof DecimalType) {
      BigDecimal d = rs.getBigDecimal(at);
      v = d == null ? null : d.setScale(((DecimalType) type).scale(), RoundingMode.HALF_UP);
    } else if (type instanceof TimestampType) {
      v = rs.getTimestamp(at);
    } else if (type instanceof TimestampNTZType) {
      java.sql.Timestamp t = rs.getTimestamp(at);
      v = t == null ? null : t.toLocalDateTime();
    } else if (type instanceof DateType) {
      v = rs.getDate(at);
    } else if (type instanceof BinaryType) {
      v = rs.getBytes(at);
    } else {
      v = rs.getString(at);
    }
    return rs.wasNull() ? null : v;
  }
}
