package streamsql.testudf;

import org.apache.flink.table.functions.ScalarFunction;

/** A boxed parameter sees NULL itself. */
public class OrZero extends ScalarFunction {
    public int eval(Integer x) {
        return x == null ? 0 : x;
    }
}
