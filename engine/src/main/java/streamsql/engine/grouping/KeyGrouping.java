package streamsql.engine.grouping;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.WeakHashMap;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.execution.SortExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec;
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
 * <p>Below an operator whose result a reduction of its rows does not change, it also
 * puts that reduction ({@link ReduceExec}) below the exchange that brings the operator
 * its rows: only each key's earliest and latest rows (per key and side for a join) for an
 * operator that reads no others ({@link FirstAndLatest}), equal rows netted for one that
 * reads a row of sign n as n copies ({@link NetsEqualRows}: per distinct row for an
 * aggregation, per key and side for a join).
 *
 * <p>{@code spark.streamsql.keyGrouping} = {@code sort} keeps Spark's sort (to compare);
 * {@code spark.streamsql.keyGrouping.hashBits} (tests) keeps that many bits of the hash,
 * so that keys share hashes and the regrouping is exercised.
 * {@code spark.streamsql.reduceBeforeShuffle} = {@code false} ships every row (to
 * compare); {@code spark.streamsql.reduceBeforeShuffle.maxKeys} (tests) bounds the
 * reductions' tables of keys, which are otherwise bounded by bytes ({@link TableBudget}).
 */
public final class KeyGrouping {
  private KeyGrouping() {}

  public static final String MODE = "spark.streamsql.keyGrouping";
  public static final String HASH_BITS = "spark.streamsql.keyGrouping.hashBits";
  public static final String REDUCE = "spark.streamsql.reduceBeforeShuffle";
  public static final String REDUCE_KEYS = "spark.streamsql.reduceBeforeShuffle.maxKeys";

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
      boolean sort = "sort".equalsIgnoreCase(conf.getConfString(MODE, "hash"));
      int hashBits = sort ? 0 : Integer.parseInt(conf.getConfString(HASH_BITS, "64"));
      // No key count by default: a table is bounded by the bytes its rows take, from the
      // executor's heap (TableBudget), so that it holds as many keys as memory allows.
      int maxKeys = Boolean.parseBoolean(conf.getConfString(REDUCE, "true"))
          ? Integer.parseInt(conf.getConfString(REDUCE_KEYS, String.valueOf(Integer.MAX_VALUE))) : 0;
      return rewrite(plan, hashBits, maxKeys);
    }
  }

  /** hashBits 0: Spark's sort stays; maxKeys 0: no reduction. */
  static SparkPlan rewrite(SparkPlan plan, int hashBits, int maxKeys) {
    List<SparkPlan> children = new ArrayList<>(CollectionConverters.asJava(plan.children()));
    boolean changed = false;
    for (int i = 0; i < children.size(); i++) {
      SparkPlan child = rewrite(children.get(i), hashBits, maxKeys);
      changed |= child != children.get(i);
      children.set(i, child);
    }
    if (plan instanceof TransformWithStateExec && children.get(0) instanceof SortExec) {
      TransformWithStateExec operator = (TransformWithStateExec) plan;
      SortExec sort = (SortExec) children.get(0);
      if (!sort.global() && sortsBy(sort.sortOrder(), operator.groupingAttributes())) {
        SparkPlan input = maxKeys > 0 ? reduced(operator, sort.child(), maxKeys) : sort.child();
        if (hashBits > 0) {
          children.set(0, new KeyGroupExec(sort.sortOrder(), input, hashBits));
          changed = true;
        } else if (input != sort.child()) {
          children.set(0, sort.withNewChildren(CollectionConverters.asScala(List.of(input)).toList()));
          changed = true;
        }
      }
    }
    return changed ? plan.withNewChildren(CollectionConverters.asScala(children).toList()) : plan;
  }

  /**
   * The operator's exchange with the reduction its operator admits below it, where the
   * exchange's input has the columns the reduction reads; otherwise the exchange as it is.
   */
  private static SparkPlan reduced(TransformWithStateExec operator, SparkPlan exchange, int maxKeys) {
    if (!(exchange instanceof ShuffleExchangeExec) || ((ShuffleExchangeExec) exchange).child() instanceof ReduceExec) {
      return exchange;
    }
    SparkPlan input = ((ShuffleExchangeExec) exchange).child();
    ReduceExec.Reduction reduction = reduction(operator, input, maxKeys);
    return reduction == null ? exchange
        : exchange.withNewChildren(CollectionConverters.asScala(List.<SparkPlan>of(new ReduceExec(reduction, input)))
            .toList());
  }

  private static ReduceExec.Reduction reduction(TransformWithStateExec operator, SparkPlan input, int maxKeys) {
    Object op = operator.statefulProcessor();
    List<Attribute> data = CollectionConverters.asJava(operator.dataAttributes());
    List<Attribute> columns = CollectionConverters.asJava(input.output());
    if (op instanceof FirstAndLatest) {
      ReduceExec.Reduction firstAndLatest = firstAndLatest((FirstAndLatest) op, operator, data, columns, input, maxKeys);
      if (firstAndLatest != null) {
        return firstAndLatest;
      }
    }
    if (op instanceof NetsEqualRows) {
      int signAt = ((NetsEqualRows) op).netSignAt();
      if (signAt < 0 || signAt >= data.size()) {
        return null;
      }
      Attribute sign = data.get(signAt);
      int at = indexOf(columns, sign);
      if (at < 0 || !sign.dataType().equals(org.apache.spark.sql.types.DataTypes.IntegerType)) {
        return null;
      }
      int[] per = ((NetsEqualRows) op).netPer();
      if (per == null) {
        return NetReduction.of(at, input.schema(), maxKeys);
      }
      List<Expression> keys = keyedAlsoBy(operator, data, per, columns);
      return keys == null ? null
          : NetPerKeyReduction.of(CollectionConverters.asScala(keys).toList(), input.output(), input.schema(), at,
              maxKeys);
    }
    return null;
  }

  /** Each key's earliest and latest rows, where the input has the columns that takes. */
  private static ReduceExec.Reduction firstAndLatest(FirstAndLatest reads, TransformWithStateExec operator,
                                                     List<Attribute> data, List<Attribute> columns, SparkPlan input,
                                                     int maxKeys) {
    if (reads.majorAt() < 0 || reads.minorAt() < 0 || Math.max(reads.majorAt(), reads.minorAt()) >= data.size()) {
      return null;
    }
    Attribute major = data.get(reads.majorAt()), minor = data.get(reads.minorAt());
    List<Expression> keys = keyedAlsoBy(operator, data, reads.alsoPer(), columns);
    int majorAt = indexOf(columns, major), minorAt = indexOf(columns, minor);
    if (majorAt < 0 || minorAt < 0 || keys == null || !FirstAndLatestReduction.readable(major, minor)) {
      return null;
    }
    return FirstAndLatestReduction.of(CollectionConverters.asScala(keys).toList(), input.output(), input.schema(),
        majorAt, minorAt, maxKeys);
  }

  /**
   * The operator's key and these of its input columns ({@code also}, places in {@code
   * data}), all of them among {@code columns} (what the exchange ships); null otherwise.
   */
  private static List<Expression> keyedAlsoBy(TransformWithStateExec operator, List<Attribute> data, int[] also,
                                              List<Attribute> columns) {
    List<Attribute> keys = new ArrayList<>(CollectionConverters.asJava(operator.groupingAttributes()));
    for (int at : also) {
      if (at < 0 || at >= data.size()) {
        return null;
      }
      keys.add(data.get(at));
    }
    return keys.stream().allMatch(a -> indexOf(columns, a) >= 0) ? new ArrayList<>(keys) : null;
  }

  /** The column's place among {@code columns} (by its id), or -1. */
  private static int indexOf(List<Attribute> columns, Attribute a) {
    for (int i = 0; i < columns.size(); i++) {
      if (columns.get(i).exprId().equals(a.exprId())) {
        return i;
      }
    }
    return -1;
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
