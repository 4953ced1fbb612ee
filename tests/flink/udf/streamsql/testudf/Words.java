package streamsql.testudf;

import org.apache.flink.table.functions.TableFunction;

/** A table function: not a scalar function, so refused by name. */
public class Words extends TableFunction<String> {
    public void eval(String s) {
        for (String w : s.split(" ")) {
            collect(w);
        }
    }
}
