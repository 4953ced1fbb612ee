package streamsql.engine.grouping;

/**
 * An operator that reads a signed row of sign n as n copies of it (an aggregation whose
 * calls do not depend on the order of the rows): equal rows may be netted before they
 * are shuffled, see {@link NetReduction}.
 */
public interface NetsEqualRows {
  /** The sign's column among the operator's input columns, or -1 when rows must not be netted. */
  int netSignAt();

  /**
   * Input columns that, with the operator's key, say per what equal rows are found and
   * netted ({@link NetPerKeyReduction}: a join's side, whose rows per key are few but
   * change often); null: per distinct row ({@link NetReduction}: an aggregation, whose
   * distinct rows are few).
   */
  default int[] netPer() {
    return null;
  }
}
