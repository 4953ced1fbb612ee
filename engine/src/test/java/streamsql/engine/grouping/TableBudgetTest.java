package streamsql.engine.grouping;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The reductions' tables are bounded by bytes derived from the executor's heap and by the
 * heap free at the time, never by a count of keys; whatever bounds them, the netting
 * stays exact.
 */
class TableBudgetTest {
  static final long MB = 1L << 20;
  static final StructType SCHEMA = StructType.fromDDL("k STRING, v INT, __sign INT");

  @Test
  void theBudgetIsHalfASlotsShareOfTheHeapSparkLeavesToUserData() {
    // 1 GiB heap, Spark's 300 MB reserved, 60% to Spark's own memory: 40% of 724 MB, 2 slots
    assertEquals(724 * MB * 0.4 / 4, TableBudget.derive(1024 * MB, 300 * MB, 0.6, 2), 1.0);
    assertEquals(2 * TableBudget.derive(4096 * MB, 300 * MB, 0.6, 4), TableBudget.derive(4096 * MB, 300 * MB, 0.6, 2),
        2.0);  // twice the slots, half each
    assertTrue(TableBudget.derive(8192 * MB, 300 * MB, 0.6, 2) > 10 * TableBudget.derive(1024 * MB, 300 * MB, 0.6, 2));
    assertEquals(0, TableBudget.derive(200 * MB, 300 * MB, 0.6, 2));  // less heap than Spark reserves
  }

  @Test
  void slotsAreTheLocalMastersThreadsOrTheExecutorsCores() {
    assertEquals(1, TableBudget.slots("local", 8, 2));
    assertEquals(4, TableBudget.slots("local[4]", 8, 2));
    assertEquals(2, TableBudget.slots("local[2,4]", 8, 2));
    assertEquals(6, TableBudget.slots("local[*]", 8, 6));
    assertEquals(3, TableBudget.slots("local-cluster[2,3,1024]", 8, 2));
    assertEquals(8, TableBudget.slots("spark://host:7077", 8, 2));
    assertEquals(1, TableBudget.slots("yarn", 0, 2));
  }

  @Test
  void aTableGrowsOnlyWithinItsBudgetAndHalfTheFreeHeap() {
    TableBudget b = new TableBudget(10 * MB, () -> 8 * MB);
    assertTrue(b.mayGrow(5 * MB, 4 * MB));
    assertFalse(b.mayGrow(7 * MB, 4 * MB));   // past the budget
    assertFalse(b.mayGrow(1 * MB, 5 * MB));   // more than half of what is free
  }

  /** n rows over `keys` keys (a retraction every third row), netted by a table bounded by `budget`. */
  static Map<String, Integer> netted(int n, int keys, TableBudget budget, List<Long> tableBytes, int[] out) {
    List<InternalRow> input = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      input.add(new GenericInternalRow(new Object[] {
          UTF8String.fromString("key-" + (i * 7919 % keys)), i % keys % 5, i % 3 == 2 ? -1 : 1}));
    }
    NetReduction.Rows table = new NetReduction.Rows(CollectionConverters.asScala(input.iterator()),
        UnsafeProjection.create(SCHEMA), Integer.MAX_VALUE, 2, 3);
    table.withBudget(budget);
    Map<String, Integer> sums = new HashMap<>();
    while (table.hasNext()) {
      InternalRow r = table.next();
      sums.merge(r.getUTF8String(0) + "/" + r.getInt(1), r.getInt(2), Integer::sum);
      tableBytes.add(table.bytes());
      out[0]++;
    }
    sums.values().removeIf(s -> s == 0);
    return sums;
  }

  static Map<String, Integer> expected(int n, int keys) {
    Map<String, Integer> sums = new HashMap<>();
    for (int i = 0; i < n; i++) {
      sums.merge("key-" + (i * 7919 % keys) + "/" + (i % keys % 5), i % 3 == 2 ? -1 : 1, Integer::sum);
    }
    sums.values().removeIf(s -> s == 0);
    return sums;
  }

  /** The same sums, or a short account of how they differ. */
  static void assertSame(Map<String, Integer> want, Map<String, Integer> got) {
    Map<String, String> diff = new java.util.TreeMap<>();
    for (String k : new java.util.TreeSet<>(want.keySet())) {
      if (!want.get(k).equals(got.get(k))) {
        diff.put(k, want.get(k) + " != " + got.get(k));
      }
    }
    got.keySet().stream().filter(k -> !want.containsKey(k)).forEach(k -> diff.put(k, "only got " + got.get(k)));
    assertTrue(diff.isEmpty(), diff.size() + " keys differ, e.g. "
        + diff.entrySet().stream().limit(5).map(Object::toString).toList());
  }

  @Test
  void aSmallBudgetPassesTheTableOnManyTimesAndTheNettingStaysExact() {
    List<Long> bytes = new ArrayList<>();
    int[] out = {0};
    long budget = 256 << 10;
    Map<String, Integer> got = netted(60_000, 30_000, new TableBudget(budget, () -> Long.MAX_VALUE), bytes, out);
    assertSame(expected(60_000, 30_000), got);
    assertTrue(out[0] > 30_000, "the table was passed on before it held every key: " + out[0] + " rows out");
    assertTrue(bytes.stream().allMatch(b -> b <= budget), "a table grew past its budget: " + bytes);
  }

  @Test
  void aLargeBudgetHoldsEveryKeyOnce() {
    int[] out = {0};
    Map<String, Integer> got = netted(60_000, 30_000, new TableBudget(256 * MB, () -> Long.MAX_VALUE),
        new ArrayList<>(), out);
    assertSame(expected(60_000, 30_000), got);
    assertEquals(got.size(), out[0]);  // each key's rows netted into one
  }

  @Test
  void noFreeHeapKeepsTheTableAtItsFirstSizeAndTheNettingExact() {
    List<Long> bytes = new ArrayList<>();
    int[] out = {0};
    Map<String, Integer> got = netted(20_000, 5_000, new TableBudget(256 * MB, () -> 0L), bytes, out);
    assertSame(expected(20_000, 5_000), got);
    long first = bytes.get(0);
    assertTrue(bytes.stream().allMatch(b -> b == first), "the table grew with no free heap");
  }
}
