package streamsql.engine.grouping;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.array.ByteArrayMethods;
import scala.collection.immutable.Seq;

/**
 * Signed rows netted per key before they are shuffled, for an operator that reads a row
 * of sign n as n copies of it and whose rows per key are few but change often (a join
 * of changelogs: {@link NetsEqualRows#netPer}). Netting the whole row as the key
 * ({@link NetReduction}) finds little there: a changelog's update retracts the row the
 * key's previous change inserted, which in a backlog arrived tens of thousands of rows
 * earlier, beyond a bounded table of distinct rows. Kept per key, a key's rows net
 * within a few places: the seed join's backlog, nine rows per key and side, ships one
 * or two.
 *
 * <p>Correctness: as {@link NetReduction}'s: the operator's result depends on the sum of
 * the signs of each distinct row, which netting any part of the rows keeps. A key whose
 * places are all taken by rows that do not cancel passes further rows on as they come;
 * a full table is passed on whole and starts anew. Rows are equal when their bytes are.
 */
final class NetPerKeyReduction {
  private NetPerKeyReduction() {}

  /** Distinct rows kept per key; a consistent changelog of a table keyed by the key needs two. */
  static final int PLACES = 4;

  static ReduceExec.Reduction of(Seq<Expression> keys, Seq<Attribute> input, StructType schema, int signAt,
                                 int maxKeys) {
    return new Net(keys, input, schema, signAt, maxKeys,
        "NetEqualRowsPerKey " + keys + ", " + input.apply(signAt) + ", " + KeyTable.bound(maxKeys));
  }

  static final class Net extends ReduceExec.Reduction {
    private final Seq<Expression> keys;
    private final Seq<Attribute> input;
    private final StructType schema;
    private final int signAt, maxKeys;

    Net(Seq<Expression> keys, Seq<Attribute> input, StructType schema, int signAt, int maxKeys, String description) {
      super(description);
      this.keys = keys;
      this.input = input;
      this.schema = schema;
      this.signAt = signAt;
      this.maxKeys = maxKeys;
    }

    @Override
    public scala.collection.Iterator<InternalRow> apply(scala.collection.Iterator<InternalRow> rows) {
      return Projections.keyed(keys, input, schema,
          (keyOf, toUnsafe) -> new Rows(rows, keyOf, toUnsafe, maxKeys, signAt, schema.length()));
    }
  }

  /**
   * A key's record holds {@link #PLACES} places, each the offset of a row's bytes in the
   * arena (its sign set to 0), their length (-1: free) and the sum of the signs.
   */
  static final class Rows extends KeyTable {
    private static final int PLACE = 16, ROW_AT = 0, ROW_LEN = 4, SUM = 8;

    private final UnsafeProjection keyOf;
    private final int signAt;
    private final Unsigned unsigned;
    private final UnsafeRow out;
    private final boolean[] isNew = new boolean[1];

    Rows(scala.collection.Iterator<InternalRow> rows, UnsafeProjection keyOf, UnsafeProjection toUnsafe, int maxKeys,
         int signAt, int numFields) {
      super(rows, toUnsafe, maxKeys, 0);
      this.keyOf = keyOf;
      this.signAt = signAt;
      this.unsigned = new Unsigned(signAt, numFields);
      this.out = new UnsafeRow(numFields);
    }

    @Override
    boolean add(UnsafeRow row) {
      UnsafeRow bytes = unsigned.of(row);
      int sign = unsigned.sign, size = bytes.getSizeInBytes();
      if (sign == 0) {
        return true;  // no copies of it
      }
      UnsafeRow key = keyOf.apply(row);
      int e = entry(key.getBaseObject(), key.getBaseOffset(), key.getSizeInBytes(), PLACES * PLACE, isNew);
      if (e < 0) {
        return false;
      }
      long places = at(payloadAt(recordOf[e]));
      if (isNew[0]) {
        for (int i = 0; i < PLACES; i++) {
          Platform.putInt(arena, places + i * PLACE + ROW_LEN, -1);
        }
      }
      int free = -1;
      for (int i = 0; i < PLACES; i++) {
        long p = places + i * PLACE;
        int len = Platform.getInt(arena, p + ROW_LEN);
        if (len < 0) {
          free = free < 0 ? i : free;
        } else if (len == size && ByteArrayMethods.arrayEquals(
            arena, at(Platform.getInt(arena, p + ROW_AT)), bytes.getBaseObject(), bytes.getBaseOffset(), size)) {
          long sum = Platform.getLong(arena, p + SUM) + sign;
          Platform.putLong(arena, p + SUM, sum);
          if (sum == 0) {
            Platform.putInt(arena, p + ROW_LEN, -1);  // its bytes stay in the arena until the table is passed on
          }
          return true;
        }
      }
      if (free < 0) {
        passOn(row);
        return true;
      }
      int stored = store(bytes.getBaseObject(), bytes.getBaseOffset(), size);
      if (stored < 0) {
        return false;
      }
      places = at(payloadAt(recordOf[e]));  // the arena may have grown
      long p = places + free * PLACE;
      Platform.putInt(arena, p + ROW_AT, stored);
      Platform.putInt(arena, p + ROW_LEN, size);
      Platform.putLong(arena, p + SUM, sign);
      return true;
    }

    @Override
    UnsafeRow emit(int entry, int part) {
      long places = at(payloadAt(recordOf[entry]));
      for (int i = 0, seen = 0; i < PLACES; i++) {
        long p = places + i * PLACE;
        int len = Platform.getInt(arena, p + ROW_LEN);
        if (len < 0 || seen++ < part) {
          continue;
        }
        out.pointTo(arena, at(Platform.getInt(arena, p + ROW_AT)), len);
        out.setInt(signAt, (int) Platform.getLong(arena, p + SUM));
        return out;
      }
      return null;
    }
  }
}
