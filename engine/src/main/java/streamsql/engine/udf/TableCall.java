package streamsql.engine.udf;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * One {@code eval} method of a Flink table function, called as a Spark function whose
 * value is the list of rows the call collected (Spark: an array of structs, which the
 * planner turns into rows with {@code inline}). The instance's collector — set once, as a
 * Flink task sets it — adds each collected value to the current call's rows: a Flink
 * {@code Row}'s fields, by position or, for a row made with {@code Row.withNames()}, by the
 * output type's field names; an atomic value as the one field.
 */
final class TableCall extends FlinkCall {
  private static final long serialVersionUID = 1L;

  private final StructType output;
  private final boolean rowOutput;

  private transient List<Row> collected;
  private transient Method arity;
  private transient Method byPosition;
  private transient Method names;
  private transient Method byName;

  TableCall(String className, String method, int arity, StructType output, boolean rowOutput) {
    super(className, method, arity);
    this.output = output;
    this.rowOutput = rowOutput;
  }

  @Override
  Object apply(Object... args) throws Exception {
    if (collected == null) {
      collected = new ArrayList<>();
    }
    collected.clear();
    invoke(args);
    return new ArrayList<>(collected);
  }

  @Override
  void opened(Class<?> cls, Object instance, Method eval) throws Exception {
    ClassLoader loader = cls.getClassLoader();
    Class<?> collector = Class.forName("org.apache.flink.util.Collector", true, loader);
    InvocationHandler handler = (proxy, m, a) -> switch (m.getName()) {
      case "collect" -> {
        collect(a[0]);
        yield null;
      }
      case "close" -> null;
      case "hashCode" -> System.identityHashCode(proxy);
      case "equals" -> proxy == a[0];
      case "toString" -> "the collector of " + className;
      default -> throw new UnsupportedOperationException(m.toString());
    };
    Object sink = Proxy.newProxyInstance(loader, new Class<?>[] {collector}, handler);
    cls.getMethod("setCollector", collector).invoke(instance, sink);
    if (rowOutput) {
      Class<?> row = Class.forName("org.apache.flink.types.Row", true, loader);
      arity = row.getMethod("getArity");
      byPosition = row.getMethod("getField", int.class);
      names = row.getMethod("getFieldNames", boolean.class);
      byName = row.getMethod("getField", String.class);
    }
  }

  private void collect(Object value) throws ReflectiveOperationException {
    if (collected == null) {
      collected = new ArrayList<>();
    }
    collected.add(rowOutput ? fromRow(value) : RowFactory.create(toSpark(value, output.fields()[0].dataType())));
  }

  private Row fromRow(Object value) throws ReflectiveOperationException {
    StructField[] fields = output.fields();
    if (value == null) {  // Flink pads a NULL row's columns with NULLs
      return RowFactory.create(new Object[fields.length]);
    }
    if (!byPosition.getDeclaringClass().isInstance(value)) {
      throw new IllegalArgumentException(className + " collected a " + value.getClass().getName()
          + " where its output type " + output.simpleString() + " needs an org.apache.flink.types.Row");
    }
    Object[] values = new Object[fields.length];
    Collection<?> named = (Collection<?>) names.invoke(value, false);
    if (named == null && (Integer) arity.invoke(value) != fields.length) {
      throw new IllegalArgumentException(className + " collected a row of " + arity.invoke(value)
          + " fields where its output type " + output.simpleString() + " has " + fields.length);
    }
    for (int i = 0; i < fields.length; i++) {
      Object field = named == null ? byPosition.invoke(value, i) : byName.invoke(value, fields[i].name());
      values[i] = toSpark(field, fields[i].dataType());
    }
    return RowFactory.create(values);
  }

  /** The Spark type of one call's value: the array of the output rows. */
  DataType resultType() {
    return org.apache.spark.sql.types.DataTypes.createArrayType(output, false);
  }
}
