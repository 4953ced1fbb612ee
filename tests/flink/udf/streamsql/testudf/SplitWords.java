package streamsql.testudf;

import java.util.regex.Pattern;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.FunctionHint;
import org.apache.flink.table.functions.TableFunction;
import org.apache.flink.types.Row;

/** A table function typed by a class-level @FunctionHint output: one row per word, none for NULL or blanks. */
@FunctionHint(output = @DataTypeHint("ROW<word STRING, len INT>"))
public class SplitWords extends TableFunction<Row> {
    public void eval(String s) {
        eval(s, " ");
    }

    public void eval(String s, String separator) {
        if (s == null || separator == null) {
            return;
        }
        for (String w : s.split(Pattern.quote(separator))) {
            if (!w.isEmpty()) {
                collect(Row.of(w, w.length()));
            }
        }
    }
}
