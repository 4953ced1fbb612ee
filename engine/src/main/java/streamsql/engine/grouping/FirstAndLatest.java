package streamsql.engine.grouping;

/**
 * An operator that reads, of each key's rows in a batch, only the one at the earliest
 * position in its source and the one at the latest (an upsert stream's normalization:
 * the key's previous row is retracted at the first, its new row comes from the latest;
 * a join of upsert tables on their key, which reads each side's latest).
 * The rows between them may be dropped before they are shuffled: see
 * {@link FirstAndLatestReduction}.
 *
 * <p>A position is a text (major, compared as Java strings compare) and then a number
 * (minor, null before every number); of two rows at equal positions the one that arrived
 * later is the later.
 */
public interface FirstAndLatest {
  /** The major position's column among the operator's input columns. */
  int majorAt();

  /** The minor position's column among the operator's input columns. */
  int minorAt();

  /**
   * Input columns that, with the operator's key, make up what the earliest and latest are
   * taken per (a join's side: each of its upsert inputs has its own latest row per key).
   */
  default int[] alsoPer() {
    return new int[0];
  }
}
