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
 *
 * <p>The child is not serialized. Spark's transformWithState keeps its whole node in the
 * closure of its tasks, children included, so every task of a stateful operator was sent,
 * and deserialized, the plan of everything below it: the sources, the decoders and the
 * operators before it (for the seed count over files, 73 of the operator node's 93 KB
 * serialized). What a node's task reads of it on an executor is its columns (the
 * operator above asks for them to group its input), kept here in a field of their own; the
 * node's own work is in the function each partition is given ({@link #eachPartition}), which
 * holds what it needs.
 */
abstract class UnaryPlan extends SparkPlan {
  protected final transient SparkPlan child;
  private final Seq<Attribute> output;

  UnaryPlan(SparkPlan child) {
    this.child = child;
    this.output = child.output();
  }

  @Override
  public Seq<Attribute> output() {
    return output;
  }

  @Override
  public Partitioning outputPartitioning() {
    return child.outputPartitioning();
  }

  @Override
  public Seq<SparkPlan> children() {
    // None in a copy deserialized on an executor, so that printing it there still works
    // (and the subclasses' equals and hashCode take a missing child as null).
    List<SparkPlan> children = child == null ? List.of() : List.of(child);
    return scala.jdk.javaapi.CollectionConverters.asScala(children).toList();
  }

  /** The child's partitions, each through {@code each}. */
  protected RDD<InternalRow> eachPartition(
      AbstractFunction1<scala.collection.Iterator<InternalRow>, scala.collection.Iterator<InternalRow>> each) {
    return child.execute().mapPartitionsInternal(each, false, ClassTag$.MODULE$.apply(InternalRow.class));
  }
}
