package streamsql.testudf;

import java.math.BigDecimal;
import java.math.RoundingMode;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.functions.ScalarFunction;

/** DECIMAL in and out, typed by hints. */
public class Scale extends ScalarFunction {
    public @DataTypeHint("DECIMAL(12, 2)") BigDecimal eval(@DataTypeHint("DECIMAL(10, 2)") BigDecimal x, double factor) {
        return x == null ? null : x.multiply(BigDecimal.valueOf(factor)).setScale(2, RoundingMode.HALF_UP);
    }
}
