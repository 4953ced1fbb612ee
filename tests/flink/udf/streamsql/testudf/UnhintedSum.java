package streamsql.testudf;

import java.math.BigDecimal;
import org.apache.flink.table.functions.AggregateFunction;

/** An accumulator with a BigDecimal field without a @DataTypeHint, which Flink cannot type. */
public class UnhintedSum extends AggregateFunction<Long, UnhintedSum.Acc> {

    public static class Acc {
        public BigDecimal total = BigDecimal.ZERO;
    }

    @Override
    public Acc createAccumulator() {
        return new Acc();
    }

    @Override
    public Long getValue(Acc acc) {
        return acc.total.longValue();
    }

    public void accumulate(Acc acc, Long x) {
        if (x != null) {
            acc.total = acc.total.add(BigDecimal.valueOf(x));
        }
    }
}
