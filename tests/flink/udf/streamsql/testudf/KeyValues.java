package streamsql.testudf;

import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.functions.TableFunction;
import org.apache.flink.types.Row;

/**
 * A table function typed by a class-level @DataTypeHint: "a=1;b=x" gives (a, 1), (b, NULL).
 * Its separators are set in open(), so a call without open() fails.
 */
@DataTypeHint("ROW<k STRING, v BIGINT>")
public class KeyValues extends TableFunction<Row> {
    private String pairs;
    private String equals;

    @Override
    public void open(FunctionContext context) {
        pairs = ";";
        equals = "=";
    }

    public void eval(String s) {
        if (s == null) {
            return;
        }
        for (String pair : s.split(pairs)) {
            int at = pair.indexOf(equals);
            String key = at < 0 ? pair : pair.substring(0, at);
            Long value = null;
            try {
                value = at < 0 ? null : Long.parseLong(pair.substring(at + 1));
            } catch (NumberFormatException e) {
                value = null;
            }
            collect(Row.of(key, value));
        }
    }
}
