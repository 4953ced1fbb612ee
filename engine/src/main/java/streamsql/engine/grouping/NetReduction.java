package streamsql.engine.grouping;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;

/**
 * Signed rows equal in every column but the sign, netted in each partition before they
 * are shuffled to an operator that reads a row of sign n as n copies of it ({@link
 * NetsEqualRows}; Flink's local aggregation). A batch that changes a few groups many
 * times then ships a few rows.
 *
 * <p>Correctness: the operator's result depends on the sum of the signs of each distinct
 * row, which netting any part of the rows keeps; rows whose signs cancel out are dropped.
 * Rows are equal when their bytes are (Spark's own row equality, as in its hash
 * aggregate): values that are equal with different bytes are only netted less.
 */
final class NetReduction {
  private NetReduction() {}

  static ReduceExec.Reduction of(int signAt, StructType schema, int maxKeys) {
    return new Net(signAt, schema, maxKeys);
  }

  static final class Net extends ReduceExec.Reduction {
    private final int signAt, maxKeys;
    private final StructType schema;

    Net(int signAt, StructType schema, int maxKeys) {
      super("NetEqualRows " + schema.fields()[signAt].name() + ", " + KeyTable.bound(maxKeys));
      this.signAt = signAt;
      this.schema = schema;
      this.maxKeys = maxKeys;
    }

    @Override
    public scala.collection.Iterator<InternalRow> apply(scala.collection.Iterator<InternalRow> rows) {
      return Projections.rows(schema, toUnsafe -> new Rows(rows, toUnsafe, maxKeys, signAt, schema.length()));
    }
  }

  /**
   * A key is the row with its sign set to 0; its record's payload is the sum of the
   * signs. A row is passed on as the key's bytes with the sum for its sign.
   */
  static final class Rows extends KeyTable {
    private final int signAt;
    private final Unsigned unsigned;
    private final UnsafeRow out;
    private final boolean[] isNew = new boolean[1];

    Rows(scala.collection.Iterator<InternalRow> rows, UnsafeProjection toUnsafe, int maxKeys, int signAt,
         int numFields) {
      super(rows, toUnsafe, maxKeys, 0);
      this.signAt = signAt;
      this.unsigned = new Unsigned(signAt, numFields);
      this.out = new UnsafeRow(numFields);
    }

    @Override
    boolean add(UnsafeRow row) {
      UnsafeRow key = unsigned.of(row);
      long sign = unsigned.sign;
      int e = entry(key.getBaseObject(), key.getBaseOffset(), key.getSizeInBytes(), 8, isNew);
      if (e < 0) {
        return false;
      }
      long sum = at(payloadAt(recordOf[e]));
      Platform.putLong(arena, sum, (isNew[0] ? 0 : Platform.getLong(arena, sum)) + sign);
      return true;
    }

    @Override
    UnsafeRow emit(int entry, int part) {
      int o = recordOf[entry];
      long sum = Platform.getLong(arena, at(payloadAt(o)));
      if (part > 0 || sum == 0) {
        return null;
      }
      out.pointTo(arena, at(keyAt(o)), payloadAt(o) - keyAt(o));
      out.setInt(signAt, (int) sum);
      return out;
    }
  }
}
