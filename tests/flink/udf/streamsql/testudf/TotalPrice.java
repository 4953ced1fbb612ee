package streamsql.testudf;

import java.math.BigDecimal;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.FunctionHint;
import org.apache.flink.table.functions.AggregateFunction;

/**
 * A sum of prices times quantities, its result typed by the class's @FunctionHint output
 * (DECIMAL(12, 2)), its accumulator a POJO with a hinted BigDecimal; takes a primitive int
 * (NOT NULL) quantity. Retracts.
 */
@FunctionHint(output = @DataTypeHint("DECIMAL(12, 2)"))
public class TotalPrice extends AggregateFunction<BigDecimal, TotalPrice.Acc> {

    public static class Acc {
        @DataTypeHint("DECIMAL(20, 2)")
        public BigDecimal total = BigDecimal.ZERO;
        public long rows;
    }

    @Override
    public Acc createAccumulator() {
        return new Acc();
    }

    @Override
    public BigDecimal getValue(Acc acc) {
        return acc.rows == 0 ? null : acc.total;
    }

    public void accumulate(Acc acc, @DataTypeHint("DECIMAL(10, 2)") BigDecimal price, int quantity) {
        if (price != null) {
            acc.total = acc.total.add(price.multiply(BigDecimal.valueOf(quantity)));
        }
        acc.rows++;
    }

    public void retract(Acc acc, @DataTypeHint("DECIMAL(10, 2)") BigDecimal price, int quantity) {
        if (price != null) {
            acc.total = acc.total.subtract(price.multiply(BigDecimal.valueOf(quantity)));
        }
        acc.rows--;
    }
}
