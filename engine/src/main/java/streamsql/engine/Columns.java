package streamsql.engine;

/**
 * The column names the operators read and write beside a query's own columns, defined
 * once for Java (job/changelog/columns.py for Python; tests/changelog/test_spec_contract.py
 * checks the two agree).
 */
public final class Columns {
  private Columns() {}

  /** A signed row: +n adds n copies, -n retracts them. */
  public static final String SIGN = "__sign";
  /** The sink's net effect of a row whose key emits no other ('+U', '-D' or NULL). */
  public static final String NET = "__net";
  /** An upsert sink's change: '+U' (replace) or '-D' (delete). */
  public static final String OP = "__op";
  /** A Top-N row's rank. */
  public static final String RANK = "__rnk";
  /** Which input of a join a row comes from (0, 1, …). */
  public static final String SIDE = "__side";
  /** A normalized change's position in its source (see {@link NormalizeOp}). */
  public static final String POSITION_MAJOR = "__pos_major";
  public static final String POSITION_MINOR = "__pos_minor";
  /** A session window's bounds (ms). */
  public static final String SESSION_START = "__start";
  public static final String SESSION_END = "__end";
  /** An upsert table's rows before normalization: the change kind and the source position. */
  public static final String UPSERT_KIND = "kind";
  public static final String UPSERT_MAJOR = "seq_major";
  public static final String UPSERT_MINOR = "seq_minor";
}
