package streamsql.testudf;

import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.functions.AggregateFunction;
import org.apache.flink.api.java.tuple.Tuple2;

/**
 * How many rows have a value at least the threshold, and how many rows in all, as "k of n":
 * a Flink Tuple2 accumulator, a getValue typed by @DataTypeHint, an overload without a
 * threshold. Retracts.
 */
public class CountIf extends AggregateFunction<String, Tuple2<Long, Long>> {

    @Override
    public Tuple2<Long, Long> createAccumulator() {
        return Tuple2.of(0L, 0L);
    }

    @Override
    @DataTypeHint("VARCHAR(40)")
    public String getValue(Tuple2<Long, Long> acc) {
        return acc.f0 + " of " + acc.f1;
    }

    public void accumulate(Tuple2<Long, Long> acc, Integer value, int threshold) {
        acc.f1++;
        if (value != null && value >= threshold) {
            acc.f0++;
        }
    }

    public void accumulate(Tuple2<Long, Long> acc, Integer value) {
        accumulate(acc, value, 1);
    }

    public void retract(Tuple2<Long, Long> acc, Integer value, int threshold) {
        acc.f1--;
        if (value != null && value >= threshold) {
            acc.f0--;
        }
    }

    public void retract(Tuple2<Long, Long> acc, Integer value) {
        retract(acc, value, 1);
    }
}
