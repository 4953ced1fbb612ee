package streamsql.engine.grouping;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.collection.immutable.Seq;

/**
 * Of each key's rows in a partition, only the one at the earliest position and the one
 * at the latest, before they are shuffled to an operator that reads no others
 * ({@link FirstAndLatest}; {@link KeyGrouping} puts a {@link ReduceExec} with this
 * reduction below that operator's exchange).
 *
 * <p>Why: an upsert topic's backlog changes each key many times (the seed count over a
 * 5M-record topic: 50 records per key), and every record was shuffled, grouped (2.5M rows
 * per task, so the grouping spilled to disk) and turned into Java objects, for the
 * operator to keep two of each key's rows. The count over that topic: 17.2 -> 14.9 s.
 *
 * <p>Correctness: the earliest of a key's rows is the earliest of the earliest rows of the
 * parts its rows were split into, and the same for the latest, so dropping the rows
 * between them in any part changes neither. Ties follow {@link FirstAndLatest}: at equal
 * positions a later arrival replaces the latest and not the earliest, as the operator
 * reads them. The table of keys is bounded (keys, and the bytes of its rows); when it is
 * full it is passed on whole and starts anew, which is exact by the same argument. A
 * partition whose keys hardly repeat is passed on as it comes once that is clear. See
 * {@link FirstAndLatestRows} for the table.
 */
final class FirstAndLatestReduction {
  private FirstAndLatestReduction() {}

  /** Can the positions be read as this reduction reads them (a text, then a whole number)? */
  static boolean readable(Attribute major, Attribute minor) {
    DataType m = minor.dataType();
    return major.dataType().equals(DataTypes.StringType)
        && (m.equals(DataTypes.LongType) || m.equals(DataTypes.IntegerType));
  }

  /**
   * The reduction below an exchange whose input is {@code input}, the positions being its
   * columns {@code majorAt} and {@code minorAt} ({@link #readable}).
   */
  static ReduceExec.Reduction of(Seq<Expression> keys, Seq<Attribute> input, StructType schema, int majorAt,
                                 int minorAt, int maxKeys) {
    Attribute major = input.apply(majorAt), minor = input.apply(minorAt);
    return new Reduce(keys, input, schema, majorAt, minorAt, minor.dataType().equals(DataTypes.LongType), maxKeys,
        "FirstAndLatestPerKey " + keys + ", " + major + ", " + minor + ", " + KeyTable.bound(maxKeys));
  }

  /** Per partition: the reduced rows. */
  static final class Reduce extends ReduceExec.Reduction {
    private final Seq<Expression> keys;
    private final Seq<Attribute> input;
    private final StructType schema;
    private final int majorAt, minorAt, maxKeys;
    private final boolean longMinor;

    Reduce(Seq<Expression> keys, Seq<Attribute> input, StructType schema, int majorAt, int minorAt,
           boolean longMinor, int maxKeys, String description) {
      super(description);
      this.keys = keys;
      this.input = input;
      this.schema = schema;
      this.majorAt = majorAt;
      this.minorAt = minorAt;
      this.longMinor = longMinor;
      this.maxKeys = maxKeys;
    }

    @Override
    public scala.collection.Iterator<InternalRow> apply(scala.collection.Iterator<InternalRow> rows) {
      return Projections.keyed(keys, input, schema,
          (keyOf, toUnsafe) -> new FirstAndLatestRows(rows, keyOf, toUnsafe, this, schema.length()));
    }

    int maxKeys() {
      return maxKeys;
    }

    /** The row's major position: null, or the text (valid while the row is). */
    UTF8String major(UnsafeRow r) {
      return r.isNullAt(majorAt) ? null : r.getUTF8String(majorAt);
    }

    /** The row's minor position (null: before every number). */
    long minor(UnsafeRow r) {
      if (r.isNullAt(minorAt)) {
        return Long.MIN_VALUE;
      }
      return longMinor ? r.getLong(minorAt) : r.getInt(minorAt);
    }
  }

  /** The order of two positions (see {@link FirstAndLatest}). */
  static int compare(UTF8String majorA, long minorA, UTF8String majorB, long minorB) {
    if (majorA != majorB) {
      if (majorA == null || majorB == null) {
        return majorA == null ? -1 : 1;
      }
      if (!majorA.equals(majorB)) {
        // Java's order of the texts (UTF-16 units), as the operator compares them; UTF-8
        // bytes order characters beyond the basic plane differently.
        return majorA.toString().compareTo(majorB.toString());
      }
    }
    return Long.compare(minorA, minorB);
  }
}
