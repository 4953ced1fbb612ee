package streamsql.engine.grouping;

import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkEnv;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.expressions.XXH64;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.UnsafeExternalRowSorter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.collection.unsafe.sort.PrefixComparators;
import org.apache.spark.util.collection.unsafe.sort.RecordComparator;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;

/**
 * The rows of each partition with the rows of every key next to each other: what a
 * stateful operator (transformWithState) needs of its input, which Spark provides by
 * sorting the partition by the key ({@link KeyGrouping} puts this node in that sort's
 * place).
 *
 * <p>Why: the operator only needs each key's rows together, not the keys in order, and
 * sorting by a string key costs a comparison of the rows themselves whenever two keys
 * share their first 8 bytes, which rows of one key always do: in the seed's 3-way join
 * over 15M events, Spark's sort took 37% of the tasks' time, 27 points of it in
 * comparisons. Here the partition is sorted by a 64-bit hash of the key instead, with a
 * radix sort over the hash alone (no row is compared, and Spark's sorter still spills to
 * disk as its own sort does); keys that share a hash are then regrouped.
 *
 * <p>Correctness: rows come out in runs of equal hash. Within a run, rows of the run's
 * first key are passed on as they come; rows of any other key in the run (a hash
 * collision, or rows of several keys merged from spill files) are held, grouped by key,
 * and passed on when the run ends. Keys are compared by their bytes (Spark's UnsafeRow
 * equality, as its hash aggregate and the state store key do). So every key's rows are
 * adjacent, which is all the operator's grouped iterator reads; the node reports the
 * sort's ordering so that Spark adds no sort of its own, and that report is read only by
 * the operator above it. Within a key, rows keep their input order unless spilled, as
 * with Spark's sort; the operators do not depend on it (see Operator).
 */
public final class KeyGroupExec extends UnaryPlan {
  private final Seq<SortOrder> order;
  private final int hashBits;  // 64; fewer only in tests (see KeyGrouping)

  public KeyGroupExec(Seq<SortOrder> order, SparkPlan child, int hashBits) {
    super(child);
    this.order = order;
    this.hashBits = hashBits;
  }

  /** The order of the sort this node stands in for; see the class comment. */
  @Override
  public Seq<SortOrder> outputOrdering() {
    return order;
  }

  @Override
  public SparkPlan withNewChildrenInternal(IndexedSeq<SparkPlan> children) {
    return new KeyGroupExec(order, children.apply(0), hashBits);
  }

  @Override
  public RDD<InternalRow> doExecute() {
    List<Expression> keys = new ArrayList<>();
    scala.jdk.javaapi.CollectionConverters.asJava(order).forEach(o -> keys.add(o.child()));
    Group group = new Group(keys, child.output(), child.schema(), hashBits);
    return eachPartition(group);
  }

  @Override
  public String nodeName() {
    return "GroupByKeyHash";
  }

  @Override
  public int productArity() {
    return 3;
  }

  @Override
  public Object productElement(int n) {
    switch (n) {
      case 0: return order;
      case 1: return child;
      case 2: return hashBits;
      default: throw new IndexOutOfBoundsException(String.valueOf(n));
    }
  }

  @Override
  public boolean canEqual(Object that) {
    return that instanceof KeyGroupExec;
  }

  @Override
  public boolean equals(Object that) {
    return that instanceof KeyGroupExec && ((KeyGroupExec) that).order.equals(order)
        && java.util.Objects.equals(((KeyGroupExec) that).child, child) && ((KeyGroupExec) that).hashBits == hashBits;
  }

  @Override
  public int hashCode() {
    return 31 * order.hashCode() + java.util.Objects.hashCode(child);
  }

  /** Per partition: sort by the keys' hash, then regroup runs of equal hash. */
  static final class Group extends AbstractFunction1<Iterator<InternalRow>, Iterator<InternalRow>>
      implements Serializable {
    private final List<Expression> keys;
    private final Seq<Attribute> input;
    private final StructType schema;
    private final long mask;

    Group(List<Expression> keys, Seq<Attribute> input, StructType schema, int hashBits) {
      this.keys = keys;
      this.input = input;
      this.schema = schema;
      this.mask = hashBits >= 64 ? -1L : (1L << hashBits) - 1;
    }

    @Override
    public Iterator<InternalRow> apply(Iterator<InternalRow> rows) {
      // One projection serves the sort and the regrouping: the sorter reads every row
      // before the first comes out.
      UnsafeProjection keyOf = UnsafeProjection.create(scala.jdk.javaapi.CollectionConverters.asScala(keys).toSeq(),
          input);
      UnsafeExternalRowSorter.PrefixComputer hashOf = new UnsafeExternalRowSorter.PrefixComputer() {
        private final Prefix prefix = new Prefix();

        @Override
        public Prefix computePrefix(InternalRow row) {
          prefix.value = hash(keyOf.apply(row)) & mask;
          prefix.isNull = false;
          return prefix;
        }
      };
      try {
        UnsafeExternalRowSorter sorter = UnsafeExternalRowSorter.createWithRecordComparator(schema,
            NoOrder::new, PrefixComparators.LONG, hashOf, SparkEnv.get().memoryManager().pageSizeBytes(), true);
        @SuppressWarnings("unchecked")
        Iterator<UnsafeRow> unsafe = (Iterator<UnsafeRow>) (Iterator<?>) rows;
        return new Regrouped(sorter.sort(unsafe), keyOf, mask);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }
  }

  static long hash(UnsafeRow key) {
    return XXH64.hashUnsafeBytes(key.getBaseObject(), key.getBaseOffset(), key.getSizeInBytes(), 42L);
  }

  /** Rows of equal hash are equal for the sorter: it never compares rows (see the class comment). */
  static final class NoOrder extends RecordComparator {
    @Override
    public int compare(Object leftBase, long leftOffset, int leftLength, Object rightBase, long rightOffset,
                       int rightLength) {
      return 0;
    }
  }

  /**
   * Sorted-by-hash rows with every key's rows adjacent. A row returned by {@link #next}
   * may be the sorter's reused row, valid until the next call, as Spark's sort returns
   * them; held rows are copies.
   */
  static final class Regrouped extends AbstractIterator<InternalRow> {
    private final Iterator<InternalRow> sorted;
    private final UnsafeProjection keyOf;
    private final ArrayDeque<UnsafeRow> ready = new ArrayDeque<>();
    private final Map<UnsafeRow, List<UnsafeRow>> held = new LinkedHashMap<>();
    private final long mask;
    private UnsafeRow runKey;
    private long runHash;

    Regrouped(Iterator<InternalRow> sorted, UnsafeProjection keyOf, long mask) {
      this.sorted = sorted;
      this.keyOf = keyOf;
      this.mask = mask;
    }

    @Override
    public boolean hasNext() {
      while (ready.isEmpty()) {
        if (!sorted.hasNext()) {
          release();
          return !ready.isEmpty();
        }
        UnsafeRow row = (UnsafeRow) sorted.next();
        UnsafeRow key = keyOf.apply(row);
        long h = hash(key) & mask;
        if (runKey == null || h != runHash) {
          release();
          runKey = key.copy();
          runHash = h;
          ready.add(row);
        } else if (key.equals(runKey)) {
          ready.add(row);
        } else {
          held.computeIfAbsent(key.copy(), k -> new ArrayList<>()).add(row.copy());
        }
      }
      return true;
    }

    /** The held keys of the run that ends, each key's rows together. */
    private void release() {
      if (!held.isEmpty()) {
        for (List<UnsafeRow> rows : held.values()) {
          ready.addAll(rows);
        }
        held.clear();
      }
    }

    @Override
    public InternalRow next() {
      if (!hasNext()) {
        throw new java.util.NoSuchElementException();
      }
      return ready.poll();
    }
  }
}
