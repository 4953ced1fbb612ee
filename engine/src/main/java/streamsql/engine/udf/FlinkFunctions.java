package streamsql.engine.udf;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
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
import streamsql.engine.spec.EvalMethod;
import streamsql.engine.spec.FunctionDescription;
import streamsql.engine.spec.JavaValue;
import streamsql.engine.spec.ScalarFunction;
import streamsql.engine.spec.Specs;

/**
 * Flink user-defined scalar functions (classes extending Flink's {@code ScalarFunction}) on
 * Spark, as the planner calls them through py4j (job/plan/user_functions.py).
 *
 * <p>The planner first asks {@link #describe} what the class is: its Flink kind and its
 * public {@code eval} methods, each parameter's and the result's Java class and
 * {@code @DataTypeHint}. It types the call from that with Flink's rules, picks the
 * overload, and then {@link #register}s that one method as a Spark function, which a query
 * calls by name. Nothing here is compiled against Flink: its classes are reached by
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
    List<EvalMethod> evals = new ArrayList<>();
    for (Method m : cls.getMethods()) {
      if (!m.getName().equals("eval") || Modifier.isStatic(m.getModifiers())) {
        continue;
      }
      List<JavaValue> params = new ArrayList<>();
      Annotation[][] hints = m.getParameterAnnotations();
      Class<?>[] types = m.getParameterTypes();
      for (int i = 0; i < types.length; i++) {
        params.add(new JavaValue(types[i].getName(), hint(hints[i])));
      }
      evals.add(new EvalMethod(m.toGenericString(), m.isVarArgs(), functionHint(m.getAnnotations()), params,
          new JavaValue(m.getReturnType().getName(), hint(m.getAnnotations()))));
    }
    return new FunctionDescription(kind(cls), null, noInstance, Modifier.isAbstract(cls.getModifiers()),
        functionHint(cls.getAnnotations()),
        overridden(cls, "getTypeInference") || overridden(cls, "getResultType")
            || overridden(cls, "getParameterTypes"),
        deterministic, evals);
  }

  private static boolean functionHint(Annotation[] annotations) {
    return hasAnnotation(annotations, "FunctionHint") || hasAnnotation(annotations, "FunctionHints");
  }

  /**
   * Registers the function a {@link ScalarFunction} spec describes: the {@code eval} method
   * whose {@link Method#toGenericString()} is its method, as the Spark function of its name
   * returning its result type (a Spark DDL type).
   */
  public static void register(SparkSession spark, String json) throws Exception {
    ScalarFunction spec = Specs.read(json, ScalarFunction.class);
    String className = spec.className();
    String method = spec.method();
    Method eval = ScalarCall.evalMethod(Class.forName(className, true, loader(spark)), method);
    DataType type = DataType.fromDDL(spec.resultType());
    ScalarCall call = new ScalarCall(className, method, eval.getParameterCount(), type);
    UserDefinedFunction udf = switch (eval.getParameterCount()) {
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
          "a function of " + eval.getParameterCount() + " arguments (1 to " + ScalarCall.MAX_ARGS + " run)");
    };
    spark.udf().register(spec.name(), spec.deterministic() ? udf : udf.asNondeterministic());
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
