package streamsql.testudf;

import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.functions.ScalarFunction;

/** Overloads by arity, and state set up in open(): Flink calls open before the first eval. */
public class Greet extends ScalarFunction {
    private String greeting;

    @Override
    public void open(FunctionContext context) {
        greeting = "hello";
    }

    public String eval(String name) {
        return name == null ? null : greeting + " " + name;
    }

    public String eval(String name, Integer times) {
        if (name == null || times == null) {
            return null;
        }
        return (greeting + " ").repeat(Math.max(times, 0)) + name;
    }
}
