package streamsql.engine.udf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.Test;
import streamsql.engine.spec.EvalMethod;
import streamsql.engine.spec.FunctionDescription;
import streamsql.engine.spec.JavaValue;
import streamsql.engine.spec.Specs;

/** What the planner is told about a user's function class (Flink itself is not on this class path). */
class FlinkFunctionsTest {
  /** Not a Flink function: described as "other", its public instance eval methods listed. */
  public static class Plain {
    public Integer eval(int a, long b) {
      return a;
    }

    public String eval(String... parts) {
      return String.join("", parts);
    }

    public static int eval(double ignored) {
      return 0;
    }
  }

  public abstract static class Abstract {}

  static FunctionDescription describe(Class<?> cls) throws ReflectiveOperationException {
    return FlinkFunctions.describe(FlinkFunctionsTest.class.getClassLoader(), cls.getName());
  }

  @Test
  void aClassIsDescribedWithItsInstanceEvalMethods() throws Exception {
    FunctionDescription d = describe(Plain.class);
    assertEquals("other", d.kind());
    assertNull(d.missing());
    assertFalse(d.abstractClass());
    // No isDeterministic (Flink's FunctionDefinition): made, but not asked, so deterministic.
    assertNotNull(d.noInstance());
    assertTrue(d.deterministic());
    List<EvalMethod> evals = d.evals().stream().sorted(Comparator.comparing(EvalMethod::method)).toList();
    assertEquals(2, evals.size(), "the static eval is not one");
    EvalMethod two = evals.get(0);
    assertEquals(List.of(new JavaValue("int", null), new JavaValue("long", null)), two.params());
    assertEquals(new JavaValue("java.lang.Integer", null), two.returns());
    assertFalse(two.varargs());
    assertTrue(evals.get(1).varargs());
    assertEquals("[Ljava.lang.String;", evals.get(1).params().get(0).className());
  }

  @Test
  void aClassThatCannotLoadSaysWhy() throws Exception {
    FunctionDescription d = FlinkFunctions.describe(getClass().getClassLoader(), "no.such.Function");
    assertTrue(d.missing().contains("no.such.Function"));
    assertEquals(List.of(), d.evals());
    assertTrue(describe(Abstract.class).abstractClass());
  }

  @Test
  void aDescriptionReadsBackFieldForField() throws Exception {
    FunctionDescription d = describe(Plain.class);
    assertEquals(d, Specs.read(Specs.write(d), FunctionDescription.class));
  }
}
