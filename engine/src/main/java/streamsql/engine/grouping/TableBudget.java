package streamsql.engine.grouping;

import java.util.function.LongSupplier;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;

/**
 * How large a reduction's table ({@link KeyTable}) may grow: bytes derived from the
 * executor's heap, never a count of keys. The table's keys cost what their rows' bytes
 * cost (measured as the rows arrive: its arena and index arrays), so a table of short
 * keys holds many, one of wide rows few, and a bigger executor holds more of either.
 *
 * <p>Derivation. The table lives on the JVM's heap outside Spark's accounted memory, in
 * what Spark's unified memory manager leaves to user data structures: {@code (heap -
 * reserved) * (1 - spark.memory.fraction)} (reserved: Spark's 300 MB). That share is the
 * executor's, for all the tasks it runs at once, so each task slot gets its part. A
 * table grows by doubling its arrays, and while one is copied the old and the new array
 * are both alive (1.5 times the table): a table of at most half the slot's part peaks at
 * three quarters of it, leaving the rest of the slot's part to the task's other objects.
 *
 * <p>And the heap as it is now: a table grows only while the growth takes at most half
 * of the heap that is free at that moment (what the JVM reports as not in use, garbage
 * not yet collected counting as in use, so the check errs on the side of a smaller table),
 * so a busy executor reduces less rather than running out of memory. A table that may
 * not grow is passed on and starts anew, which the reductions allow at any point.
 */
final class TableBudget {
  /** Spark's reserved system memory (UnifiedMemoryManager's RESERVED_SYSTEM_MEMORY_BYTES). */
  static final long SPARK_RESERVED = 300L << 20;

  final long bytes;
  private final LongSupplier freeHeap;

  TableBudget(long bytes, LongSupplier freeHeap) {
    this.bytes = bytes;
    this.freeHeap = freeHeap;
  }

  /** May a table of {@code now} bytes grow by {@code growth} bytes? */
  boolean mayGrow(long now, long growth) {
    return now + growth <= bytes && growth <= freeHeap.getAsLong() / 2;
  }

  /** The bytes one task's table may hold, from the executor's heap and task slots. */
  static long derive(long maxHeap, long reserved, double memoryFraction, int slots) {
    long user = (long) (Math.max(0L, maxHeap - reserved) * (1.0 - memoryFraction));
    return user / Math.max(1, slots) / 2;
  }

  /** Heap not in use now (the part the JVM has not claimed yet included). */
  static long freeHeap() {
    Runtime rt = Runtime.getRuntime();
    return rt.maxMemory() - (rt.totalMemory() - rt.freeMemory());
  }

  private static volatile TableBudget executors;
  private static volatile SparkEnv derivedFor;

  /**
   * This executor's budget, derived once per SparkEnv: a session started again in the
   * same JVM (local mode given more threads) has a new one, and its own task slots.
   */
  static TableBudget ofThisExecutor() {
    TableBudget b = executors;
    SparkEnv env = SparkEnv.get();
    if (b == null || env != derivedFor) {
      int cores = Runtime.getRuntime().availableProcessors();
      long heap = Runtime.getRuntime().maxMemory();
      if (env == null) {  // outside Spark (unit tests): the heap, one slot per core
        b = new TableBudget(derive(heap, SPARK_RESERVED, 0.6, cores), TableBudget::freeHeap);
      } else {
        SparkConf conf = env.conf();
        long reserved = conf.getLong("spark.testing.reservedMemory",
            conf.contains("spark.testing") ? 0L : SPARK_RESERVED);
        int slots = slots(conf.get("spark.master", ""), conf.getInt("spark.executor.cores", cores), cores)
            / Math.max(1, conf.getInt("spark.task.cpus", 1));
        b = new TableBudget(derive(heap, reserved, conf.getDouble("spark.memory.fraction", 0.6), slots),
            TableBudget::freeHeap);
      }
      executors = b;
      derivedFor = env;
    }
    return b;
  }

  /**
   * Tasks an executor runs at once: in local mode the master's thread count ({@code
   * local[N]}, {@code local[N,F]}, {@code local[*]}, {@code local-cluster[n,C,m]}: C);
   * on a cluster the executor's cores.
   */
  static int slots(String master, int executorCores, int machineCores) {
    if (master.equals("local")) {
      return 1;
    }
    int open = master.indexOf('['), close = master.indexOf(']');
    if (!master.startsWith("local") || open < 0 || close < open) {
      return Math.max(1, executorCores);
    }
    String[] parts = master.substring(open + 1, close).split(",");
    String n = master.startsWith("local-cluster") && parts.length > 1 ? parts[1] : parts[0];
    n = n.trim();
    if (n.equals("*")) {
      return Math.max(1, machineCores);
    }
    try {
      return Math.max(1, Integer.parseInt(n));
    } catch (NumberFormatException e) {
      return Math.max(1, machineCores);
    }
  }
}
