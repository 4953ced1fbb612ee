package streamsql.testudf;

import org.apache.flink.table.functions.TableFunction;

/** A table function of STRING (its generic parameter): the words of a string, none for NULL. */
public class Words extends TableFunction<String> {
    public void eval(String s) {
        if (s == null) {
            return;
        }
        for (String w : s.split(" ")) {
            collect(w);
        }
    }
}
