package streamsql.testudf;

import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.functions.ScalarFunction;

/** How often a character occurs in a string, read as Flink's internal strings (StringData,
 * typed by hints), the way Nexmark's q14 function is written. */
public class CountChar extends ScalarFunction {
    public long eval(@DataTypeHint("STRING") StringData text, @DataTypeHint("STRING") StringData character) {
        if (text == null || character == null) {
            return -1;
        }
        String s = text.toString();
        String c = character.toString();
        long n = 0;
        for (int i = 0; !c.isEmpty() && (i = s.indexOf(c, i)) >= 0; i += c.length()) {
            n++;
        }
        return n;
    }
}
