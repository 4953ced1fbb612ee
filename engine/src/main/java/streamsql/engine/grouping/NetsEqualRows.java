package streamsql.engine.grouping;

/**
 * An operator that reads a signed row of sign n as n copies of it (an aggregation whose
 * calls do not depend on the order of the rows): equal rows may be netted before they
 * are shuffled, see {@link NetReduction}.
 */
public interface NetsEqualRows {
  /** The sign's column among the operator's input columns, or -1 when rows must not be netted. */
  int netSignAt();
}
