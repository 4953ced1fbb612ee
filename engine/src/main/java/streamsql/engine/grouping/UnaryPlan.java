package streamsql.engine.grouping;

import java.util.List;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.physical.Partitioning;
import org.apache.spark.sql.execution.SparkPlan;
import scala.collection.immutable.Seq;
import scala.reflect.ClassTag$;
import scala.runtime.AbstractFunction1;

/**
 * A node of the engine's own with one child, whose columns and partitioning it keeps:
 * what Scala's UnaryExecNode gives Spark's nodes, which a Java class cannot mix in.
 */
abstract class UnaryPlan extends SparkPlan {
  protected final SparkPlan child;

  UnaryPlan(SparkPlan child) {
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

  /** The child's partitions, each through {@code each}. */
  protected RDD<InternalRow> eachPartition(
      AbstractFunction1<scala.collection.Iterator<InternalRow>, scala.collection.Iterator<InternalRow>> each) {
    return child.execute().mapPartitionsInternal(each, false, ClassTag$.MODULE$.apply(InternalRow.class));
  }
}
