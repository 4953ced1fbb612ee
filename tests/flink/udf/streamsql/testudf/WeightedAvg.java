package streamsql.testudf;

import org.apache.flink.table.functions.AggregateFunction;

/**
 * Flink's documented weighted average: a POJO accumulator (public fields, not Serializable)
 * with accumulate, retract, merge and resetAccumulator; NULL values or weights are skipped.
 */
public class WeightedAvg extends AggregateFunction<Long, WeightedAvg.Acc> {

    /** The accumulator: public mutable fields and a default constructor, as Flink's POJOs have. */
    public static class Acc {
        public long sum = 0;
        public int count = 0;
    }

    @Override
    public Acc createAccumulator() {
        return new Acc();
    }

    @Override
    public Long getValue(Acc acc) {
        return acc.count == 0 ? null : acc.sum / acc.count;
    }

    public void accumulate(Acc acc, Long value, Integer weight) {
        if (value != null && weight != null) {
            acc.sum += value * weight;
            acc.count += weight;
        }
    }

    public void retract(Acc acc, Long value, Integer weight) {
        if (value != null && weight != null) {
            acc.sum -= value * weight;
            acc.count -= weight;
        }
    }

    public void merge(Acc acc, Iterable<Acc> it) {
        for (Acc a : it) {
            acc.count += a.count;
            acc.sum += a.sum;
        }
    }

    public void resetAccumulator(Acc acc) {
        acc.count = 0;
        acc.sum = 0L;
    }
}
