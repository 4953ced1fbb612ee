package streamsql.testudf;

import org.apache.flink.table.functions.AggregateFunction;

/**
 * The longest string so far (the first of equal length), with no retract method: Flink runs
 * it over an append-only input only. Its accumulator has private fields with getters and
 * setters.
 */
public class Longest extends AggregateFunction<String, Longest.Acc> {

    public static class Acc {
        private String best;
        private long seen;

        public String getBest() {
            return best;
        }

        public void setBest(String best) {
            this.best = best;
        }

        public long getSeen() {
            return seen;
        }

        public void setSeen(long seen) {
            this.seen = seen;
        }
    }

    @Override
    public Acc createAccumulator() {
        return new Acc();
    }

    @Override
    public String getValue(Acc acc) {
        return acc.best == null ? null : acc.best + "/" + acc.seen;
    }

    public void accumulate(Acc acc, String s) {
        acc.seen++;
        if (s != null && (acc.best == null || s.length() > acc.best.length())) {
            acc.best = s;
        }
    }
}
