package streamsql.engine.udf;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import java.io.Serializable;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.function.Function;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.objenesis.strategy.StdInstantiatorStrategy;

/**
 * A user's Flink aggregate function (a class extending Flink's {@code AggregateFunction<T,
 * ACC>}) as the engine's group aggregation calls it: one instance per task, made and opened
 * as a Flink task does, whose {@code createAccumulator}, chosen {@code accumulate} and
 * {@code retract} methods and {@code getValue} run on the accumulators the operator keeps.
 *
 * <p>An accumulator lives in Spark's state store between micro-batches, as bytes. It is
 * usually a POJO of the user's (often not {@code Serializable}, so Java serialization will
 * not do), a Flink {@code Tuple} or {@code Row}: Kryo — which Spark ships and Flink itself
 * falls back to for such types — writes any of them field by field, making an object
 * without calling a constructor where there is no default one (Objenesis). Its bytes name
 * the accumulator's class and hold its fields in name order, so they read back after a
 * restart from the checkpoint as long as the class's fields stay the same (Flink's own
 * state has the same condition for a class it cannot evolve).
 */
public final class FlinkAggregate implements Serializable {
  private static final long serialVersionUID = 1L;

  private final String className;
  private final String accumulate;
  private final String retract;
  private final StructType arguments;
  private final DataType resultType;

  private transient Object instance;
  private transient Method create;
  private transient Method accumulateMethod;
  private transient Method retractMethod;
  private transient Method getValue;
  private transient Function<Object, Object>[] toFlink;
  private transient boolean[] primitive;
  private transient Kryo kryo;

  /**
   * {@code accumulate} and {@code retract}: the methods' {@link Method#toGenericString()}
   * (retract null: the input has no retractions); {@code arguments}: the struct of the
   * arguments a call passes (one field per parameter after the accumulator).
   */
  public FlinkAggregate(String className, String accumulate, String retract, StructType arguments,
                        DataType resultType) {
    this.className = className;
    this.accumulate = accumulate;
    this.retract = retract;
    this.arguments = arguments;
    this.resultType = resultType;
  }

  /** A new accumulator: createAccumulator()'s. */
  public Object createAccumulator() {
    open();
    return call(create);
  }

  /**
   * Calls accumulate {@code n} times with the arguments {@code args} (retract {@code -n}
   * times when n is negative).
   */
  public void add(Object accumulator, Row args, long n) {
    open();
    if (n < 0 && retractMethod == null) {
      throw new IllegalStateException(className + " has no retract method, but its input retracted a row");
    }
    Object[] values = new Object[1 + toFlink.length];
    values[0] = accumulator;
    for (int i = 0; i < toFlink.length; i++) {
      Object v = args.get(i);
      values[1 + i] = v == null ? null : toFlink[i].apply(v);
      if (values[1 + i] == null && primitive[i]) {
        throw new IllegalArgumentException(className + ".accumulate: NULL for the primitive parameter " + (i + 2));
      }
    }
    Method m = n >= 0 ? accumulateMethod : retractMethod;
    for (long i = 0; i < Math.abs(n); i++) {
      call(m, values);
    }
  }

  /** getValue(accumulator), as Spark takes it for the result type. */
  public Object value(Object accumulator) {
    open();
    return FlinkCall.toSpark(call(getValue, accumulator), resultType);
  }

  /** The accumulator's bytes (see the class comment). */
  public byte[] write(Object accumulator) {
    open();
    Output out = new Output(128, -1);
    kryo.writeClassAndObject(out, accumulator);
    return out.toBytes();
  }

  /** The accumulator {@link #write} wrote. */
  public Object read(byte[] bytes) {
    open();
    return kryo.readClassAndObject(new Input(bytes));
  }

  private Object call(Method m, Object... args) {
    try {
      return m.invoke(instance, args);
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      throw cause instanceof RuntimeException r ? r : new RuntimeException(cause);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
  }

  @SuppressWarnings("unchecked")
  private void open() {
    if (instance != null) {
      return;
    }
    try {
      Class<?> cls = FlinkCall.load(className);
      Method acc = FlinkCall.method(cls, "accumulate", accumulate);
      Class<?>[] params = acc.getParameterTypes();
      Function<Object, Object>[] in = new Function[params.length - 1];
      boolean[] primitives = new boolean[in.length];
      for (int i = 0; i < in.length; i++) {
        in[i] = FlinkCall.toFlink(params[1 + i], cls.getClassLoader());
        primitives[i] = params[1 + i].isPrimitive();
      }
      if (in.length != arguments.size()) {
        throw new IllegalArgumentException(accumulate + " takes " + in.length + " arguments, the call passes "
            + arguments.size());
      }
      Kryo k = new Kryo();
      k.setRegistrationRequired(false);
      k.setClassLoader(cls.getClassLoader());
      k.setInstantiatorStrategy(new Kryo.DefaultInstantiatorStrategy(new StdInstantiatorStrategy()));
      create = cls.getMethod("createAccumulator");
      getValue = valueMethod(cls);
      retractMethod = retract == null ? null : FlinkCall.method(cls, "retract", retract);
      accumulateMethod = acc;
      toFlink = in;
      primitive = primitives;
      kryo = k;
      instance = FlinkCall.opened(cls);
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException("cannot open the aggregate function " + className + ": " + e, e);
    }
  }

  private static Method valueMethod(Class<?> cls) {
    for (Method m : cls.getMethods()) {
      if (m.getName().equals("getValue") && m.getParameterCount() == 1 && !m.isBridge()) {
        return m;
      }
    }
    throw new IllegalArgumentException(cls.getName() + " has no getValue method");
  }
}
