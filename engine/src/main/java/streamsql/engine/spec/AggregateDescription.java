package streamsql.engine.spec;

import java.util.List;

/**
 * What a user's Flink aggregate function class says beyond its accumulate methods
 * ({@link FunctionDescription#aggregate}): the accumulator — the Java class its
 * {@code AggregateFunction<T, ACC>} binds ACC to (null: left open) with the class's
 * {@code @FunctionHint(accumulator = …)} type text as its hint —, the accumulator class's
 * fields (each one's class and {@code @DataTypeHint}), {@code getValue}'s return class and
 * {@code @DataTypeHint} (null: no getValue), and the signatures of its public
 * {@code retract} methods.
 */
public record AggregateDescription(JavaValue accumulator, List<JavaValue> accumulatorFields, JavaValue value,
                                   List<String> retracts) implements java.io.Serializable {}
