package streamsql.engine.spec;

import java.util.List;

/**
 * One public {@code eval} method of a user's function class: its signature (as
 * {@code Method.toGenericString()} writes it, the name {@link ScalarFunction#method} gives
 * back), whether it takes variable arguments, its parameters' and result's Java classes
 * (a table function's {@code eval} returns {@code void}; a {@code @DataTypeHint} on it types
 * the function's output), and its {@code @FunctionHint}: {@code hintedOutput} is the type
 * text of the hint's {@code output} (null: none), {@code functionHint} says that it declares
 * more than its output (input types, argument names …) or there are several.
 */
public record EvalMethod(String method, boolean varargs, boolean functionHint, String hintedOutput,
                         List<JavaValue> params, JavaValue returns) implements java.io.Serializable {}
