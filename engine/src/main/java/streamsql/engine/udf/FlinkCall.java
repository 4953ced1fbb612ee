package streamsql.engine.udf;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.sql.Date;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.function.Function;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.api.java.UDF10;
import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.sql.api.java.UDF3;
import org.apache.spark.sql.api.java.UDF4;
import org.apache.spark.sql.api.java.UDF5;
import org.apache.spark.sql.api.java.UDF6;
import org.apache.spark.sql.api.java.UDF7;
import org.apache.spark.sql.api.java.UDF8;
import org.apache.spark.sql.api.java.UDF9;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.StringType;

/**
 * One {@code eval} method of a Flink user-defined function, called as a Spark function of 1
 * to {@link #MAX_ARGS} arguments; {@link ScalarCall} and {@link TableCall} say what becomes
 * of what it returns or collects.
 *
 * <p>What travels to the executors is the class's and the method's names; each executor
 * loads the class, makes one instance and calls its {@code open} once, as a Flink task
 * does, before the first call. Arguments arrive as Spark's Java values and are converted to
 * the parameter's class (a Flink {@code StringData}, a {@code LocalDateTime} …); results back
 * to Spark's. Spark's TIMESTAMP values are UTC instants of the wall-clock time (the
 * session's zone is UTC), so a {@code LocalDateTime} is read and written at UTC.
 */
abstract class FlinkCall implements UDF1<Object, Object>, UDF2<Object, Object, Object>,
    UDF3<Object, Object, Object, Object>, UDF4<Object, Object, Object, Object, Object>,
    UDF5<Object, Object, Object, Object, Object, Object>,
    UDF6<Object, Object, Object, Object, Object, Object, Object>,
    UDF7<Object, Object, Object, Object, Object, Object, Object, Object>,
    UDF8<Object, Object, Object, Object, Object, Object, Object, Object, Object>,
    UDF9<Object, Object, Object, Object, Object, Object, Object, Object, Object, Object>,
    UDF10<Object, Object, Object, Object, Object, Object, Object, Object, Object, Object, Object> {

  static final int MAX_ARGS = 10;
  private static final long serialVersionUID = 1L;

  final String className;
  final String method;
  private final int arity;

  private transient Object instance;
  private transient Method eval;
  private transient Function<Object, Object>[] toFlink;
  private transient boolean[] primitive;

  FlinkCall(String className, String method, int arity) {
    this.className = className;
    this.method = method;
    this.arity = arity;
  }

  /** What the call of {@code eval} with Spark's values {@code args} gives Spark. */
  abstract Object apply(Object... args) throws Exception;

  /**
   * Set up what the subclass needs of the opened instance (before its first call), the
   * instance made and opened, its eval method found.
   */
  abstract void opened(Class<?> cls, Object instance, Method eval) throws Exception;

  /** Calls {@code eval} with Spark's values converted to its parameters' classes; its return value. */
  final Object invoke(Object... args) throws Exception {
    if (eval == null) {
      open();
    }
    Object[] values = new Object[arity];
    for (int i = 0; i < arity; i++) {
      values[i] = args[i] == null ? null : toFlink[i].apply(args[i]);
      if (values[i] == null && primitive[i]) {
        throw new IllegalArgumentException(className + ".eval: NULL for the primitive parameter " + (i + 1));
      }
    }
    try {
      return eval.invoke(instance, values);
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      throw cause instanceof Exception ? (Exception) cause : new RuntimeException(cause);
    }
  }

  @SuppressWarnings("unchecked")
  private synchronized void open() throws Exception {
    if (eval != null) {
      return;
    }
    Class<?> cls = load();
    Method found = evalMethod(cls, method);
    Object made = opened(cls);
    Class<?>[] params = found.getParameterTypes();
    Function<Object, Object>[] in = new Function[arity];
    boolean[] primitives = new boolean[arity];
    for (int i = 0; i < arity; i++) {
      in[i] = toFlink(params[i], cls.getClassLoader());
      primitives[i] = params[i].isPrimitive();
    }
    opened(cls, made, found);
    toFlink = in;
    primitive = primitives;
    instance = made;
    eval = found;
  }

  /** A new instance of the function class, opened as a Flink task opens it. */
  static Object opened(Class<?> cls) throws Exception {
    Object made = cls.getDeclaredConstructor().newInstance();
    // Flink opens a function with a context; a function's context without a running
    // Flink task answers its defaults (job parameters, metrics).
    Class<?> contextClass = Class.forName(FlinkFunctions.FLINK + "FunctionContext", true, cls.getClassLoader());
    Class<?> runtimeContext = Class.forName("org.apache.flink.api.common.functions.RuntimeContext", true,
        cls.getClassLoader());
    Object context = contextClass.getConstructor(runtimeContext).newInstance((Object) null);
    cls.getMethod("open", contextClass).invoke(made, context);
    return made;
  }

  /** The public eval method whose {@link Method#toGenericString()} is {@code method}. */
  static Method evalMethod(Class<?> cls, String method) {
    return method(cls, "eval", method);
  }

  /** The public method named {@code name} whose {@link Method#toGenericString()} is {@code method}. */
  static Method method(Class<?> cls, String name, String method) {
    for (Method m : cls.getMethods()) {
      if (m.getName().equals(name) && m.toGenericString().equals(method)) {
        return m;
      }
    }
    throw new IllegalArgumentException("no method " + method + " in " + cls.getName());
  }

  /** On an executor the task's class loader has the session's jars; on the driver (Spark
   * folding a call of constants) the session's own loader has them. */
  private Class<?> load() throws ClassNotFoundException {
    return load(className);
  }

  static Class<?> load(String className) throws ClassNotFoundException {
    try {
      return Class.forName(className, true, Thread.currentThread().getContextClassLoader());
    } catch (ClassNotFoundException e) {
      scala.Option<SparkSession> session = SparkSession.getActiveSession();
      if (session.isEmpty()) {
        session = SparkSession.getDefaultSession();
      }
      if (session.isEmpty()) {
        throw e;
      }
      return Class.forName(className, true, FlinkFunctions.loader(session.get()));
    }
  }

  static Function<Object, Object> toFlink(Class<?> type, ClassLoader loader) throws Exception {
    switch (type.getName()) {
      case "org.apache.flink.table.data.StringData": {
        Method from = Class.forName(type.getName(), true, loader).getMethod("fromString", String.class);
        return v -> {
          try {
            return from.invoke(null, v.toString());
          } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
          }
        };
      }
      case "java.time.LocalDate":
        return v -> v instanceof Date ? ((Date) v).toLocalDate() : v;
      case "java.time.LocalDateTime":
        return v -> v instanceof Timestamp ? LocalDateTime.ofInstant(((Timestamp) v).toInstant(), ZoneOffset.UTC)
            : v instanceof Instant ? LocalDateTime.ofInstant((Instant) v, ZoneOffset.UTC) : v;
      case "java.time.Instant":
        return v -> v instanceof Timestamp ? ((Timestamp) v).toInstant() : v;
      default:
        return v -> v;
    }
  }

  /**
   * A Flink value as Spark takes it for a column of type {@code spark}: a {@code StringData}
   * (whatever its implementation class) as a String, a {@code LocalDateTime} as its instant
   * at UTC, a {@code BigDecimal} as Flink's DecimalData.fromBigDecimal makes it (rounded half
   * up to the scale, NULL when its digits do not fit the precision); anything else as it is.
   */
  static Object toSpark(Object value, DataType spark) {
    if (value == null) {
      return null;
    }
    if (value instanceof LocalDateTime t) {
      return t.toInstant(ZoneOffset.UTC);
    }
    if (value instanceof BigDecimal x && spark instanceof DecimalType d) {
      BigDecimal scaled = x.setScale(d.scale(), RoundingMode.HALF_UP);
      return scaled.precision() > d.precision() ? null : scaled;
    }
    if (spark instanceof StringType && !(value instanceof String)) {  // a StringData
      return value.toString();
    }
    return value;
  }

  @Override public Object call(Object a) throws Exception {
    return apply(a);
  }

  @Override public Object call(Object a, Object b) throws Exception {
    return apply(a, b);
  }

  @Override public Object call(Object a, Object b, Object c) throws Exception {
    return apply(a, b, c);
  }

  @Override public Object call(Object a, Object b, Object c, Object d) throws Exception {
    return apply(a, b, c, d);
  }

  @Override public Object call(Object a, Object b, Object c, Object d, Object e) throws Exception {
    return apply(a, b, c, d, e);
  }

  @Override public Object call(Object a, Object b, Object c, Object d, Object e, Object f) throws Exception {
    return apply(a, b, c, d, e, f);
  }

  @Override public Object call(Object a, Object b, Object c, Object d, Object e, Object f, Object g)
      throws Exception {
    return apply(a, b, c, d, e, f, g);
  }

  @Override public Object call(Object a, Object b, Object c, Object d, Object e, Object f, Object g, Object h)
      throws Exception {
    return apply(a, b, c, d, e, f, g, h);
  }

  @Override public Object call(Object a, Object b, Object c, Object d, Object e, Object f, Object g, Object h,
      Object i) throws Exception {
    return apply(a, b, c, d, e, f, g, h, i);
  }

  @Override public Object call(Object a, Object b, Object c, Object d, Object e, Object f, Object g, Object h,
      Object i, Object j) throws Exception {
    return apply(a, b, c, d, e, f, g, h, i, j);
  }
}
