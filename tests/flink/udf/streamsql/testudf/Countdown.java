package streamsql.testudf;

import org.apache.flink.table.functions.TableFunction;

/** A table function typed by its generic parameter (INT): n, n - 1, …, 1; nothing for NULL or n < 1. */
public class Countdown extends TableFunction<Integer> {
    public void eval(Integer n) {
        if (n == null) {
            return;
        }
        for (int i = n; i >= 1; i--) {
            collect(i);
        }
    }
}
