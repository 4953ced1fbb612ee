package streamsql.engine.grouping;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.WeakHashMap;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.execution.SortExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.streaming.operators.stateful.transformwithstate.TransformWithStateExec;
import org.apache.spark.sql.internal.SQLConf;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * Puts {@link KeyGroupExec} in the place of the sort Spark adds below each
 * transformWithState operator of a session's queries (the engine's stateful operators).
 *
 * <p>The rule runs among Spark's physical preparations, after Spark has added the
 * exchanges and sorts the operators require (as a columnar rule: the one hook a session
 * offers at that point). It is installed on the session's extensions when the engine
 * plans its first operator, so it needs no setting at start-up (a plain spark-submit
 * given the engine's jar by ADD JAR gets it too), and every streaming query started
 * afterwards has it: each runs in a clone of the session, whose rules are built from the
 * extensions when it starts.
 *
 * <p>{@code spark.streamsql.keyGrouping} = {@code sort} keeps Spark's sort (to compare);
 * {@code spark.streamsql.keyGrouping.hashBits} (tests) keeps that many bits of the hash,
 * so that keys share hashes and the regrouping is exercised.
 */
public final class KeyGrouping {
  private KeyGrouping() {}

  public static final String MODE = "spark.streamsql.keyGrouping";
  public static final String HASH_BITS = "spark.streamsql.keyGrouping.hashBits";

  private static final Set<SparkSessionExtensions> INSTALLED =
      Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

  /** Install the rule in the session's extensions, once. */
  public static void install(org.apache.spark.sql.SparkSession session) {
    if (!(session instanceof org.apache.spark.sql.classic.SparkSession)) {
      return;  // Spark Connect: no physical plans here
    }
    SparkSessionExtensions extensions = ((org.apache.spark.sql.classic.SparkSession) session).extensions();
    if (INSTALLED.add(extensions)) {
      extensions.injectColumnar(new Inject());
    }
  }

  static final class Inject extends AbstractFunction1<org.apache.spark.sql.SparkSession, ColumnarRule> {
    @Override
    public ColumnarRule apply(org.apache.spark.sql.SparkSession session) {
      return new Rules();
    }
  }

  static final class Rules extends ColumnarRule {
    @Override
    public Rule<SparkPlan> postColumnarTransitions() {
      return new Replace();
    }
  }

  static final class Replace extends Rule<SparkPlan> {
    @Override
    public SparkPlan apply(SparkPlan plan) {
      SQLConf conf = SQLConf.get();
      if ("sort".equalsIgnoreCase(conf.getConfString(MODE, "hash"))) {
        return plan;
      }
      return rewrite(plan, Integer.parseInt(conf.getConfString(HASH_BITS, "64")));
    }
  }

  static SparkPlan rewrite(SparkPlan plan, int hashBits) {
    List<SparkPlan> children = new ArrayList<>(CollectionConverters.asJava(plan.children()));
    boolean changed = false;
    for (int i = 0; i < children.size(); i++) {
      SparkPlan child = rewrite(children.get(i), hashBits);
      changed |= child != children.get(i);
      children.set(i, child);
    }
    if (plan instanceof TransformWithStateExec && children.get(0) instanceof SortExec) {
      SortExec sort = (SortExec) children.get(0);
      if (!sort.global() && sortsBy(sort.sortOrder(), ((TransformWithStateExec) plan).groupingAttributes())) {
        children.set(0, new KeyGroupExec(sort.sortOrder(), sort.child(), hashBits));
        changed = true;
      }
    }
    return changed ? plan.withNewChildren(CollectionConverters.asScala(children).toList()) : plan;
  }

  /** Is this the sort by the operator's key that Spark added for it (any direction)? */
  private static boolean sortsBy(scala.collection.immutable.Seq<SortOrder> order,
                                 scala.collection.immutable.Seq<Attribute> keys) {
    if (order.size() != keys.size() || keys.isEmpty()) {
      return false;
    }
    for (int i = 0; i < keys.size(); i++) {
      if (!order.apply(i).child().semanticEquals(keys.apply(i))) {
        return false;
      }
    }
    return true;
  }
}
