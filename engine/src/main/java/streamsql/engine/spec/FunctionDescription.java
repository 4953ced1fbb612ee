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
 */
public record FunctionDescription(String kind, String missing, String noInstance, boolean abstractClass,
                                  boolean functionHint, boolean customInference, boolean deterministic,
                                  List<EvalMethod> evals) implements java.io.Serializable {

  /** A class that cannot be loaded, and why. */
  public static FunctionDescription missing(String why) {
    return new FunctionDescription("other", why, null, false, false, false, true, List.of());
  }
}
