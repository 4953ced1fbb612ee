package streamsql.engine.grouping;

import java.io.Serializable;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.SparkPlan;
import scala.collection.immutable.IndexedSeq;
import scala.runtime.AbstractFunction1;

/**
 * A partition's rows reduced per key before an exchange ships them to a stateful
 * operator whose result the reduction does not change ({@link KeyGrouping} puts it
 * there; the reductions: {@link FirstAndLatestReduction}, {@link NetReduction},
 * {@link NetPerKeyReduction}). The
 * rows keep their columns and their partitioning; there are just fewer of them.
 */
public final class ReduceExec extends UnaryPlan {
  /** What a partition's rows become; {@link #toString} names it in the plan. */
  public abstract static class Reduction
      extends AbstractFunction1<scala.collection.Iterator<InternalRow>, scala.collection.Iterator<InternalRow>>
      implements Serializable {
    private final String description;

    Reduction(String description) {
      this.description = description;
    }

    @Override
    public String toString() {
      return description;
    }
  }

  private final Reduction reduction;

  public ReduceExec(Reduction reduction, SparkPlan child) {
    super(child);
    this.reduction = reduction;
  }

  @Override
  public SparkPlan withNewChildrenInternal(IndexedSeq<SparkPlan> children) {
    return new ReduceExec(reduction, children.apply(0));
  }

  @Override
  public RDD<InternalRow> doExecute() {
    return eachPartition(reduction);
  }

  @Override
  public String nodeName() {
    return reduction.toString();
  }

  @Override
  public int productArity() {
    return 1;
  }

  @Override
  public Object productElement(int n) {
    if (n == 0) {
      return child;
    }
    throw new IndexOutOfBoundsException(String.valueOf(n));
  }

  @Override
  public boolean canEqual(Object that) {
    return that instanceof ReduceExec;
  }

  @Override
  public boolean equals(Object that) {
    return that instanceof ReduceExec && ((ReduceExec) that).reduction.toString().equals(reduction.toString())
        && java.util.Objects.equals(((ReduceExec) that).child, child);
  }

  @Override
  public int hashCode() {
    return 31 * reduction.toString().hashCode() + java.util.Objects.hashCode(child);
  }
}
