package streamsql.engine.grouping;

import java.io.Serializable;
import java.util.List;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.physical.Partitioning;
import org.apache.spark.sql.execution.SparkPlan;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.reflect.ClassTag$;
import scala.runtime.AbstractFunction1;

/**
 * A partition's rows reduced per key before an exchange ships them to a stateful
 * operator whose result the reduction does not change ({@link KeyGrouping} puts it
 * there; the reductions: {@link FirstAndLatestReduction}, {@link NetReduction}). The
 * rows keep their columns and their partitioning; there are just fewer of them.
 */
public final class ReduceExec extends SparkPlan {
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
  private final SparkPlan child;

  public ReduceExec(Reduction reduction, SparkPlan child) {
    this.reduction = reduction;
    this.child = child;
  }

  @Override
  public Seq<Attribute> output() {
    return child.output();
  }

  @Override
  public Partitioning outputPartitioning() {
    return child.outputPartitioning();
  }

  @Override
  public Seq<SparkPlan> children() {
    return scala.jdk.javaapi.CollectionConverters.asScala(List.of(child)).toList();
  }

  @Override
  public SparkPlan withNewChildrenInternal(IndexedSeq<SparkPlan> children) {
    return new ReduceExec(reduction, children.apply(0));
  }

  @Override
  public RDD<InternalRow> doExecute() {
    return child.execute().mapPartitionsInternal(reduction, false, ClassTag$.MODULE$.apply(InternalRow.class));
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
        && ((ReduceExec) that).child.equals(child);
  }

  @Override
  public int hashCode() {
    return 31 * reduction.toString().hashCode() + child.hashCode();
  }
}
