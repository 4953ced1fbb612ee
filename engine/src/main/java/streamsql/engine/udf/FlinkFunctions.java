package streamsql.engine.udf;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
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
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import streamsql.engine.spec.AggregateDescription;
import streamsql.engine.spec.EvalMethod;
import streamsql.engine.spec.FunctionDescription;
import streamsql.engine.spec.JavaValue;
import streamsql.engine.spec.ScalarFunction;
import streamsql.engine.spec.Specs;
import streamsql.engine.spec.TableFunction;

/**
 * Flink user-defined scalar and table functions (classes extending Flink's
 * {@code ScalarFunction} or {@code TableFunction}) on Spark, as the planner calls them
 * through py4j (job/plan/user_functions.py); aggregate functions are described here and run
 * by the engine's group aggregation ({@link FlinkAggregate}).
 *
 * <p>The planner first asks {@link #describe} what the class is: its Flink kind and its
 * public {@code eval} methods, each parameter's and the result's Java class and
 * {@code @DataTypeHint}, and a table function's output as its class declares it. It types
 * the call from that with Flink's rules, picks the overload, and then {@link #register}s
 * (or {@link #registerTable}s) that one method as a Spark function, which a query calls by
 * name. Nothing here is compiled against Flink: its classes are reached by
 * reflection through the session's class loader, where the pipeline's jars and Flink's
 * function API (jars/flink/) were added.
 */
public final class FlinkFunctions {
  private FlinkFunctions() {}

  static final String FLINK = "org.apache.flink.table.functions.";

  /** The class loader that sees the jars added to the session (ADD JAR). */
  static ClassLoader loader(SparkSession spark) {
    return spark.sharedState().jarClassLoader();
  }

  /**
   * What the class is, as a {@link FunctionDescription} in JSON (Specs.write): the planner
   * reads it into its dataclass of the same name (job/changelog/replies.py).
   */
  public static String describe(SparkSession spark, String className) throws ReflectiveOperationException {
    return Specs.write(describe(loader(spark), className));
  }

  /** What the class of this name is, as {@code loader} finds it. */
  static FunctionDescription describe(ClassLoader loader, String className) throws ReflectiveOperationException {
    Class<?> cls;
    try {
      cls = Class.forName(className, true, loader);
    } catch (ClassNotFoundException | LinkageError e) {
      return FunctionDescription.missing(e.toString());
    }
    boolean deterministic = true;
    String noInstance = null;
    try {
      Object instance = cls.getDeclaredConstructor().newInstance();
      deterministic = (Boolean) cls.getMethod("isDeterministic").invoke(instance);
    } catch (ReflectiveOperationException | ClassCastException e) {
      noInstance = e.toString();
    }
    String kind = kind(cls);
    boolean aggregate = kind.equals("aggregate");
    // An aggregate function's signatures are its accumulate methods (the accumulator first).
    String evalName = aggregate ? "accumulate" : "eval";
    List<EvalMethod> evals = new ArrayList<>();
    for (Method m : cls.getMethods()) {
      if (!m.getName().equals(evalName) || Modifier.isStatic(m.getModifiers()) || m.isBridge()) {
        continue;
      }
      List<JavaValue> params = new ArrayList<>();
      Annotation[][] hints = m.getParameterAnnotations();
      Class<?>[] types = m.getParameterTypes();
      for (int i = 0; i < types.length; i++) {
        params.add(new JavaValue(types[i].getName(), hint(hints[i])));
      }
      Hint methodHint = functionHint(m.getAnnotations());
      evals.add(new EvalMethod(m.toGenericString(), m.isVarArgs(), methodHint.more(), methodHint.output(), params,
          new JavaValue(m.getReturnType().getName(), hint(m.getAnnotations()))));
    }
    Hint classHint = functionHint(cls.getAnnotations());
    JavaValue output = kind.equals("table") || aggregate
        ? new JavaValue(typeArgument(cls, aggregate ? "AggregateFunction" : "TableFunction", 0),
                        hint(cls.getAnnotations())) : null;
    return new FunctionDescription(kind, null, noInstance, Modifier.isAbstract(cls.getModifiers()),
        classHint.more(), classHint.output(),
        overridden(cls, "getTypeInference") || overridden(cls, "getResultType")
            || overridden(cls, "getParameterTypes") || overridden(cls, "getAccumulatorType"),
        deterministic, output, overridden(cls, "finish"), evals,
        aggregate ? aggregateDescription(cls, classHint) : null);
  }

  /**
   * What an aggregate function's class says of its accumulator, its value and its retract
   * methods: the Java class {@code AggregateFunction<T, ACC>} binds ACC to (with the class's
   * {@code @FunctionHint(accumulator = …)} as its hint), the accumulator class's fields as
   * Flink's extraction reads them (non-static, non-transient), getValue's return class and
   * {@code @DataTypeHint}, and every public retract method's signature (Method.toGenericString()).
   */
  private static AggregateDescription aggregateDescription(Class<?> cls, Hint classHint)
      throws ReflectiveOperationException {
    String accumulator = typeArgument(cls, "AggregateFunction", 1);
    List<JavaValue> fields = new ArrayList<>();
    if (accumulator != null) {
      try {
        for (Class<?> c = Class.forName(accumulator, false, cls.getClassLoader()); c != null && c != Object.class;
             c = c.getSuperclass()) {
          for (java.lang.reflect.Field f : c.getDeclaredFields()) {
            int mods = f.getModifiers();
            if (!Modifier.isStatic(mods) && !Modifier.isTransient(mods)) {
              fields.add(new JavaValue(f.getType().getName(), hint(f.getAnnotations())));
            }
          }
        }
      } catch (ClassNotFoundException | LinkageError e) {
        fields.clear();
      }
    }
    JavaValue value = null;
    List<String> retracts = new ArrayList<>();
    for (Method m : cls.getMethods()) {
      if (Modifier.isStatic(m.getModifiers()) || m.isBridge()) {
        continue;
      }
      switch (m.getName()) {
        case "getValue" -> {
          if (m.getParameterCount() == 1) {
            value = new JavaValue(m.getReturnType().getName(), hint(m.getAnnotations()));
          }
        }
        case "retract" -> retracts.add(m.toGenericString());
        default -> { }
      }
    }
    return new AggregateDescription(new JavaValue(accumulator, classHint.accumulator()), fields, value, retracts);
  }

  /**
   * A {@code @FunctionHint}'s {@code output} type text (null: none), and whether it (or
   * several of them, {@code @FunctionHints}) declares anything else.
   */
  record Hint(String output, String accumulator, boolean more) {}

  private static Hint functionHint(Annotation[] annotations) throws ReflectiveOperationException {
    if (hasAnnotation(annotations, "FunctionHints")) {
      return new Hint(null, null, true);
    }
    for (Annotation a : annotations) {
      if (!a.annotationType().getName().equals("org.apache.flink.table.annotation.FunctionHint")) {
        continue;
      }
      String output = null;
      String accumulator = null;
      boolean more = false;
      for (Method m : a.annotationType().getDeclaredMethods()) {
        Object value = m.invoke(a);
        if (m.getName().equals("output") || m.getName().equals("accumulator")) {
          Object text = ((Annotation) value).annotationType().getMethod("value").invoke(value);
          String type = text == null || text.toString().isEmpty() ? null : text.toString();
          if (m.getName().equals("output")) {
            output = type;
          } else {
            accumulator = type;
          }
        } else if (!Objects.deepEquals(value, m.getDefaultValue())) {
          more = true;
        }
      }
      return new Hint(output, accumulator, more);
    }
    return new Hint(null, null, false);
  }

  /**
   * The Java class a table function's class binds {@code TableFunction<T>}'s T to (an
   * aggregate function's, {@code AggregateFunction<T, ACC>}'s T or ACC), through its
   * superclasses' type parameters; null when it stays a type variable (or is a wildcard or
   * a generic array). A parameterized class gives its raw class ({@code List<String>}: List).
   */
  static String typeArgument(Class<?> cls, String flinkClass, int index) {
    Map<TypeVariable<?>, Type> bound = new HashMap<>();
    for (Class<?> c = cls; c != null && c != Object.class; c = c.getSuperclass()) {
      if (!(c.getGenericSuperclass() instanceof ParameterizedType p)) {
        continue;
      }
      Class<?> raw = (Class<?>) p.getRawType();
      TypeVariable<?>[] vars = raw.getTypeParameters();
      Type[] actual = p.getActualTypeArguments();
      for (int i = 0; i < vars.length; i++) {
        Type a = actual[i];
        bound.put(vars[i], a instanceof TypeVariable<?> v && bound.containsKey(v) ? bound.get(v) : a);
      }
      if (raw.getName().equals(FLINK + flinkClass)) {
        Type t = bound.get(vars[index]);
        if (t instanceof ParameterizedType pt) {
          t = pt.getRawType();
        }
        return t instanceof Class<?> k ? k.getName() : null;
      }
    }
    return null;
  }

  /**
   * Registers the function a {@link ScalarFunction} spec describes: the {@code eval} method
   * whose {@link Method#toGenericString()} is its method, as the Spark function of its name
   * returning its result type (a Spark DDL type).
   */
  public static void register(SparkSession spark, String json) throws Exception {
    ScalarFunction spec = Specs.read(json, ScalarFunction.class);
    Method eval = FlinkCall.evalMethod(Class.forName(spec.className(), true, loader(spark)), spec.method());
    DataType type = DataType.fromDDL(spec.resultType());
    ScalarCall call = new ScalarCall(spec.className(), spec.method(), eval.getParameterCount(), type);
    register(spark, spec.name(), call, eval.getParameterCount(), type, spec.deterministic());
  }

  /**
   * Registers the function a {@link TableFunction} spec describes: its {@code eval} method
   * as the Spark function of its name returning, per call, the array of the rows it
   * collected (structs of its output type, a Spark DDL struct).
   */
  public static void registerTable(SparkSession spark, String json) throws Exception {
    TableFunction spec = Specs.read(json, TableFunction.class);
    Method eval = FlinkCall.evalMethod(Class.forName(spec.className(), true, loader(spark)), spec.method());
    StructType output = (StructType) DataType.fromDDL(spec.outputType());
    TableCall call = new TableCall(spec.className(), spec.method(), eval.getParameterCount(), output,
        spec.rowOutput());
    register(spark, spec.name(), call, eval.getParameterCount(), call.resultType(), spec.deterministic());
  }

  private static void register(SparkSession spark, String name, FlinkCall call, int arity, DataType type,
      boolean deterministic) {
    UserDefinedFunction udf = switch (arity) {
      case 1 -> functions.udf((UDF1<Object, Object>) call, type);
      case 2 -> functions.udf((UDF2<Object, Object, Object>) call, type);
      case 3 -> functions.udf((UDF3<Object, Object, Object, Object>) call, type);
      case 4 -> functions.udf((UDF4<Object, Object, Object, Object, Object>) call, type);
      case 5 -> functions.udf((UDF5<Object, Object, Object, Object, Object, Object>) call, type);
      case 6 -> functions.udf((UDF6<Object, Object, Object, Object, Object, Object, Object>) call, type);
      case 7 -> functions.udf((UDF7<Object, Object, Object, Object, Object, Object, Object, Object>) call, type);
      case 8 -> functions.udf(
          (UDF8<Object, Object, Object, Object, Object, Object, Object, Object, Object>) call, type);
      case 9 -> functions.udf(
          (UDF9<Object, Object, Object, Object, Object, Object, Object, Object, Object, Object>) call, type);
      case 10 -> functions.udf(
          (UDF10<Object, Object, Object, Object, Object, Object, Object, Object, Object, Object, Object>) call,
          type);
      default -> throw new IllegalArgumentException(
          "a function of " + arity + " arguments (1 to " + FlinkCall.MAX_ARGS + " run)");
    };
    spark.udf().register(name, deterministic ? udf : udf.asNondeterministic());
  }

  private static String kind(Class<?> cls) {
    for (Class<?> c = cls; c != null; c = c.getSuperclass()) {
      switch (c.getName()) {
        case FLINK + "ScalarFunction": return "scalar";
        case FLINK + "TableFunction": return "table";
        case FLINK + "AggregateFunction": return "aggregate";
        case FLINK + "TableAggregateFunction": return "table aggregate";
        case FLINK + "AsyncScalarFunction": return "async scalar";
        case FLINK + "AsyncTableFunction": return "async table";
        case FLINK + "ProcessTableFunction": return "process table";
        default: break;
      }
    }
    return "other";
  }

  /** Does the user's class (or a class of theirs between it and Flink's) override it? */
  private static boolean overridden(Class<?> cls, String name) {
    for (Method m : cls.getMethods()) {
      if (m.getName().equals(name) && !m.getDeclaringClass().getName().startsWith("org.apache.flink.")) {
        return true;
      }
    }
    return false;
  }

  private static boolean hasAnnotation(Annotation[] annotations, String simpleName) {
    for (Annotation a : annotations) {
      if (a.annotationType().getName().equals("org.apache.flink.table.annotation." + simpleName)) {
        return true;
      }
    }
    return false;
  }

  /** {@code @DataTypeHint("…")}'s type text, "" for a hint without one, null for no hint. */
  private static String hint(Annotation[] annotations) throws ReflectiveOperationException {
    for (Annotation a : annotations) {
      if (a.annotationType().getName().equals("org.apache.flink.table.annotation.DataTypeHint")) {
        Object value = a.annotationType().getMethod("value").invoke(a);
        return value == null ? "" : value.toString();
      }
    }
    return null;
  }
}
