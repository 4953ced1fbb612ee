package streamsql.engine.udf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDateTime;
import java.util.List;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.FunctionHint;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.functions.TableFunction;
import org.apache.flink.types.Row;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import streamsql.engine.spec.EvalMethod;
import streamsql.engine.spec.FunctionDescription;
import streamsql.engine.spec.JavaValue;

/**
 * Table functions as the engine calls them: described for the planner (the output type as
 * the class declares it) and called per row, each call's collected values becoming Spark
 * rows (against the stand-ins of Flink's API in this test tree).
 */
class TableCallTest {
  /** Words and their lengths, by position; opened before its first call. */
  @FunctionHint(output = @DataTypeHint("ROW<word STRING, len INT>"))
  public static class Split extends TableFunction<Row> {
    private String separator;

    @Override
    public void open(FunctionContext context) {
      separator = " ";
    }

    public void eval(String s) {
      if (s == null) {
        return;
      }
      for (String w : s.split(separator)) {
        collect(Row.of(w, w.length()));
      }
    }
  }

  /** Rows made by name, in another order than the output type's. */
  @DataTypeHint("ROW<k STRING, v DECIMAL(5, 1)>")
  public static class Named extends TableFunction<Row> {
    public void eval(String k) {
      Row row = Row.withNames();
      row.setField("v", new BigDecimal("1.25"));
      row.setField("k", k);
      collect(row);
    }
  }

  /** T bound through a generic base class of the user's. */
  public abstract static class Base<X> extends TableFunction<X> {}

  public static class Times extends Base<LocalDateTime> {
    public void eval(Integer n) {
      for (int i = 0; i < n; i++) {
        collect(LocalDateTime.of(2024, 1, 1, 0, 0).plusHours(i));
      }
      collect(null);
    }

    @Override
    public void finish() {}
  }

  /** A method-level hint that declares input types too: more than the job reads. */
  public static class Hinted extends TableFunction<Row> {
    @FunctionHint(input = @DataTypeHint("INT"), output = @DataTypeHint("ROW<a INT>"))
    public void eval(Integer a) {
      collect(Row.of(a));
    }
  }

  private static TableCall call(Class<?> cls, String output, boolean rows) {
    return new TableCall(cls.getName(), evalOf(cls), 1, (StructType) DataType.fromDDL(output), rows);
  }

  private static String evalOf(Class<?> cls) {
    for (var m : cls.getMethods()) {
      if (m.getName().equals("eval")) {
        return m.toGenericString();
      }
    }
    throw new IllegalArgumentException(cls.getName());
  }

  @SuppressWarnings("unchecked")
  private static List<org.apache.spark.sql.Row> rows(TableCall call, Object arg) throws Exception {
    return (List<org.apache.spark.sql.Row>) call.call(arg);
  }

  @Test
  void eachCallGivesTheRowsItCollectedAndNoneForNone() throws Exception {
    TableCall split = call(Split.class, "struct<word:string,len:int>", true);
    List<org.apache.spark.sql.Row> got = rows(split, "a bb");
    assertEquals(2, got.size());
    assertEquals("a", got.get(0).getString(0));
    assertEquals(1, got.get(0).getInt(1));
    assertEquals("bb", got.get(1).getString(0));
    assertEquals(List.of(), rows(split, null), "a call that collects nothing: no rows, not the last call's");
    assertEquals(1, rows(split, "ccc").size());
    assertEquals("struct<word:string,len:int>", ((org.apache.spark.sql.types.ArrayType) split.resultType())
        .elementType().simpleString());
  }

  @Test
  void aRowByNameIsReadByTheOutputTypesFieldNames() throws Exception {
    List<org.apache.spark.sql.Row> got = rows(call(Named.class, "struct<k:string,v:decimal(5,1)>", true), "x");
    assertEquals("x", got.get(0).getString(0));
    assertEquals(new BigDecimal("1.3"), got.get(0).get(1), "rounded half up to the scale, as Flink's DecimalData");
  }

  @Test
  void anAtomicValueIsTheOneColumnConvertedToSparks() throws Exception {
    List<org.apache.spark.sql.Row> got = rows(call(Times.class, "struct<f0:timestamp>", false), 2);
    assertEquals(3, got.size());
    assertEquals(Instant.parse("2024-01-01T01:00:00Z"), got.get(1).get(0), "a LocalDateTime at UTC");
    assertNull(got.get(2).get(0));
  }

  @Test
  void aValueThatIsNoRowWhereTheOutputIsARowFailsNamingTheClass() {
    TableCall wrong = call(Times.class, "struct<a:timestamp>", true);
    Exception e = assertThrows(IllegalArgumentException.class, () -> rows(wrong, 1));
    assertTrue(e.getMessage().contains(Times.class.getName()), e.getMessage());
  }

  @Test
  void theOutputIsDescribedAsTheClassDeclaresIt() throws Exception {
    ClassLoader loader = getClass().getClassLoader();
    FunctionDescription split = FlinkFunctions.describe(loader, Split.class.getName());
    assertEquals("table", split.kind());
    assertEquals("ROW<word STRING, len INT>", split.hintedOutput());
    assertFalse(split.functionHint(), "a hint of the output only");
    assertEquals(new JavaValue("org.apache.flink.types.Row", null), split.output());
    assertFalse(split.finishes());

    FunctionDescription named = FlinkFunctions.describe(loader, Named.class.getName());
    assertNull(named.hintedOutput());
    assertEquals("ROW<k STRING, v DECIMAL(5, 1)>", named.output().hint());

    FunctionDescription times = FlinkFunctions.describe(loader, Times.class.getName());
    assertEquals("java.time.LocalDateTime", times.output().className(), "bound through Base<X>");
    assertTrue(times.finishes());
    EvalMethod eval = times.evals().get(0);
    assertEquals("void", eval.returns().className());

    EvalMethod hinted = FlinkFunctions.describe(loader, Hinted.class.getName()).evals().get(0);
    assertTrue(hinted.functionHint(), "input types: more than the output");
    assertEquals("ROW<a INT>", hinted.hintedOutput());
  }

  @Test
  void aClassThatLeavesTOpenHasNoOutputClass() {
    assertNull(FlinkFunctions.typeArgument(Base.class, "TableFunction", 0));
  }
}
