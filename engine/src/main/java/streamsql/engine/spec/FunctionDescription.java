package streamsql.engine.spec;

import java.util.List;

/**
 * What a user's Flink function class is ({@link streamsql.engine.udf.FlinkFunctions#describe}),
 * as the planner types its calls from it (job/plan/user_functions.py): the engine's answer,
 * written by Jackson and read into job/changelog/replies.py's dataclass of the same name.
 *
 * <p>{@code missing}: why the class cannot be loaded (then nothing else is known: kind
 * "other", no evals); {@code noInstance}: why it cannot be made with no arguments. The kind
 * is Flink's: "scalar", "table", "aggregate", "table aggregate", "async scalar", "async
 * table", "process table", or "other" for a class that is no Flink function.
 *
 * <p>The class's {@code @FunctionHint}: {@code hintedOutput}, the type text of its
 * {@code output} (null: none); {@code functionHint}, it declares more than that (or there are
 * several). A table function's {@code output}: the Java class its {@code TableFunction<T>}
 * binds T to (class name null when the class leaves T open) and the class's
 * {@code @DataTypeHint} (null for none); null for other kinds. {@code finishes}: the class
 * overrides {@code finish()}, which Flink calls at the end of a bounded input. An
 * aggregate function's {@code evals} are its {@code accumulate} methods (the accumulator
 * their first parameter), its {@code output} the Java class its {@code AggregateFunction<T,
 * ACC>} binds T to, and {@code aggregate} the rest of what it declares (null for other kinds).
 */
public record FunctionDescription(String kind, String missing, String noInstance, boolean abstractClass,
                                  boolean functionHint, String hintedOutput, boolean customInference,
                                  boolean deterministic, JavaValue output, boolean finishes,
                                  List<EvalMethod> evals, AggregateDescription aggregate)
    implements java.io.Serializable {

  /** A class that cannot be loaded, and why. */
  public static FunctionDescription missing(String why) {
    return new FunctionDescription("other", why, null, false, false, null, false, true, null, false, List.of(), null);
  }
}
