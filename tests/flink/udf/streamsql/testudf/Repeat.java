package streamsql.testudf;

import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.FunctionHint;
import org.apache.flink.table.functions.TableFunction;
import org.apache.flink.types.Row;

/** A table function typed by a method-level @FunctionHint, with a primitive parameter: (s, 1) … (s, times). */
public class Repeat extends TableFunction<Row> {
    @FunctionHint(output = @DataTypeHint("ROW<s STRING, i INT NOT NULL>"))
    public void eval(String s, int times) {
        for (int i = 1; i <= times; i++) {
            collect(Row.of(s, i));
        }
    }
}
