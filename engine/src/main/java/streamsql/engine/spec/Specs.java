package streamsql.engine.spec;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import streamsql.engine.Columns;

/**
 * The operators' specifications as the planner writes them (job/changelog/specs.py:
 * to_json), read by Jackson into this package's records: Python's snake_case fields are
 * the records' camelCase components. A field missing, unknown or null where a number or
 * flag is expected fails at once, on the driver, naming it.
 */
public final class Specs {
  private Specs() {}

  /** The operators' records, the expressions', then the records they are made of (as specs.py lists them). */
  public static final List<Class<? extends Record>> OPERATORS = List.of(Normalize.class, Aggregate.class, Join.class,
      Materialize.class, NetChanges.class, Rank.class, CurrentWatermark.class, Over.class, TemporalJoin.class,
      LookupJoin.class, WindowRank.class, WindowJoin.class, SessionRows.class, NumberRows.class, TemporalSort.class);
  /** What the engine's column expressions read (not operators). */
  public static final List<Class<? extends Record>> EXPRESSIONS = List.of(JsonDecoding.class, ScalarFunction.class,
      TableFunction.class);
  /** What the engine answers the planner and the run (job/changelog/replies.py), not specs it reads. */
  public static final List<Class<? extends Record>> REPLIES = List.of(FunctionDescription.class, QueryEvent.class);
  public static final List<Class<? extends Record>> PARTS = List.of(SortKey.class, AggregateCall.class,
      JoinSide.class, ConnectionProperty.class, DecodedColumn.class, EvalMethod.class, JavaValue.class,
      AggregateDescription.class);

  private static final ObjectMapper JSON = JsonMapper.builder()
      .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
      .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
      .enable(DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES)
      .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
      .build();

  public static <T extends Record> T read(String json, Class<T> type) {
    try {
      return JSON.readValue(json, type);
    } catch (JsonProcessingException e) {
      // Not the JSON itself: a lookup join's spec holds the database's credentials.
      throw new IllegalArgumentException("malformed " + type.getSimpleName() + " specification: "
          + e.getOriginalMessage(), e);
    }
  }

  /** A spec as JSON, as the planner writes it; a reply as the engine hands it back. */
  public static String write(Record spec) {
    try {
      return JSON.writeValueAsString(spec);
    } catch (IOException e) {
      throw new IllegalArgumentException(e);
    }
  }

  /**
   * Every record's fields and their kinds ({"Normalize": {"keys": "list<string>", …}}),
   * as JSON in Python's spelling: what tests/changelog/test_spec_contract.py compares with
   * specs.py's dataclasses.
   */
  public static String schema() {
    Map<String, Map<String, String>> out = new LinkedHashMap<>();
    for (List<Class<? extends Record>> group : List.of(OPERATORS, EXPRESSIONS, REPLIES, PARTS)) {
      for (Class<? extends Record> type : group) {
        Map<String, String> fields = new LinkedHashMap<>();
        for (RecordComponent c : type.getRecordComponents()) {
          fields.put(PropertyNamingStrategies.SnakeCaseStrategy.INSTANCE.translate(c.getName()),
              kind(c.getGenericType()));
        }
        out.put(type.getSimpleName(), fields);
      }
    }
    try {
      return JSON.writeValueAsString(out);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The engine's column names ({@link Columns}) by constant name, as JSON. */
  public static String columns() {
    Map<String, String> out = new LinkedHashMap<>();
    for (Field f : Columns.class.getFields()) {
      if (Modifier.isStatic(f.getModifiers()) && f.getType() == String.class) {
        try {
          out.put(f.getName(), (String) f.get(null));
        } catch (IllegalAccessException e) {
          throw new IllegalStateException(e);
        }
      }
    }
    try {
      return JSON.writeValueAsString(out);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String kind(Type type) {
    if (type instanceof ParameterizedType p && p.getRawType() == List.class) {
      return "list<" + kind(p.getActualTypeArguments()[0]) + ">";
    }
    if (type == String.class) {
      return "string";
    }
    if (type == long.class || type == int.class || type == Long.class || type == Integer.class) {
      return "integer";
    }
    if (type == boolean.class || type == Boolean.class) {
      return "boolean";
    }
    if (type instanceof Class<?> c && c.isRecord()) {
      return c.getSimpleName();
    }
    throw new IllegalStateException("a spec field of a kind the contract does not know: " + type);
  }
}
