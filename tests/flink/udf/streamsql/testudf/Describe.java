package streamsql.testudf;

import java.time.LocalDate;
import java.time.LocalDateTime;
import org.apache.flink.table.functions.ScalarFunction;

/** Overloads by type; dates and timestamps as java.time values. */
public class Describe extends ScalarFunction {
    public String eval(Integer x) {
        return "int " + x;
    }

    public String eval(String x) {
        return "string " + x;
    }

    public String eval(Boolean x) {
        return "boolean " + x;
    }

    public String eval(LocalDateTime x) {
        return "timestamp " + x;
    }

    public LocalDate eval(LocalDate x, Integer days) {
        return x == null || days == null ? null : x.plusDays(days);
    }
}
