package streamsql.testudf;

import org.apache.flink.table.functions.ScalarFunction;

/** A primitive parameter: what a NULL argument does. */
public class PlusOne extends ScalarFunction {
    public long eval(long x) {
        return x + 1;
    }
}
