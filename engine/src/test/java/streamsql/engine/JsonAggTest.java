package streamsql.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.Test;

/** JSON_ARRAYAGG and JSON_OBJECTAGG accumulators under retraction, as Flink's functions behave. */
class JsonAggTest {
  @Test
  void arrayAggRetractsTheFirstOccurrenceAndWritesNullsByItsClause() {
    Aggs.Acc kept = Aggs.of("json_arrayagg_null_on_null", DataTypes.StringType, DataTypes.StringType, false, false,
        null).create();
    Aggs.Acc absent = Aggs.of("json_arrayagg_absent_on_null", DataTypes.StringType, DataTypes.StringType, false,
        false, null).create();
    for (Aggs.Acc acc : new Aggs.Acc[] {kept, absent}) {
      assertEquals("[]", acc.result());
      acc.add("3", 1);
      acc.add(null, 1);
      acc.add("5", 1);
      acc.add("3", 1);
      acc.add("3", -1);
    }
    assertEquals("[null,5,3]", kept.result());
    assertEquals("[5,3]", absent.result());
  }

  @Test
  void objectAggSortsKeysAndFailsOnAKeyItHolds() {
    Aggs.Acc acc = Aggs.of("json_objectagg_null_on_null", null, DataTypes.StringType, false, false, null).create();
    acc.add(RowFactory.create("b", "\"x\""), 1);
    acc.add(RowFactory.create("a\"", null), 1);
    acc.add(RowFactory.create("c", "1"), 1);
    assertEquals("{\"a\\\"\":null,\"b\":\"x\",\"c\":1}", acc.result());
    // A retraction of another value, or of NULL, leaves the key (Flink compares the values).
    acc.add(RowFactory.create("c", "2"), -1);
    acc.add(RowFactory.create("a\"", null), -1);
    assertEquals("{\"a\\\"\":null,\"b\":\"x\",\"c\":1}", acc.result());
    acc.add(RowFactory.create("c", "1"), -1);
    assertEquals("{\"a\\\"\":null,\"b\":\"x\"}", acc.result());
    assertThrows(IllegalArgumentException.class, () -> acc.add(RowFactory.create("b", "2"), 1));
    assertThrows(IllegalArgumentException.class, () -> acc.add(RowFactory.create(null, "2"), 1));
  }
}
