package streamsql.testudf;

import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.FunctionHint;
import org.apache.flink.table.functions.AggregateFunction;
import org.apache.flink.types.Row;

/**
 * "sum/max" of the non-NULL values: a Flink Row accumulator, typed by the class's
 * @FunctionHint(accumulator = …); its retract keeps the maximum (as a retract may be
 * imperfect), so its answer shows which changes reached it.
 */
@FunctionHint(accumulator = @DataTypeHint("ROW<total BIGINT, top INT>"))
public class SumAndMax extends AggregateFunction<String, Row> {

    @Override
    public Row createAccumulator() {
        return Row.of(0L, null);
    }

    @Override
    public String getValue(Row acc) {
        return acc.getField(0) + "/" + acc.getField(1);
    }

    public void accumulate(Row acc, Integer x) {
        if (x != null) {
            acc.setField(0, (Long) acc.getField(0) + x);
            Integer top = (Integer) acc.getField(1);
            acc.setField(1, top == null || x > top ? x : top);
        }
    }

    public void retract(Row acc, Integer x) {
        if (x != null) {
            acc.setField(0, (Long) acc.getField(0) - x);
        }
    }
}
