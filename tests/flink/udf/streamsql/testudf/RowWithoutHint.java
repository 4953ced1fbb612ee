package streamsql.testudf;

import org.apache.flink.table.functions.TableFunction;
import org.apache.flink.types.Row;

/** A table function of Row without a hint: Flink cannot type it, nor can the job. */
public class RowWithoutHint extends TableFunction<Row> {
    public void eval(String s) {
        collect(Row.of(s));
    }
}
