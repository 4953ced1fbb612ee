package streamsql.engine.spec;

import java.util.List;

/**
 * One public {@code eval} method of a user's function class: its signature (as
 * {@code Method.toGenericString()} writes it, the name {@link ScalarFunction#method} gives
 * back), whether it takes variable arguments or carries {@code @FunctionHint}, and its
 * parameters' and result's Java classes.
 */
public record EvalMethod(String method, boolean varargs, boolean functionHint, List<JavaValue> params,
                         JavaValue returns) implements java.io.Serializable {}
