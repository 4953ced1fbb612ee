package streamsql.engine.grouping;

import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.unsafe.Platform;

/**
 * A signed row's copy with its sign set to 0, so that rows equal but for their signs have
 * equal bytes (the netting reductions' key or comparison), and the sign it had.
 */
final class Unsigned {
  private final int signAt;
  private final UnsafeRow row;
  private byte[] buffer = new byte[256];
  /** The sign of the row last given to {@link #of}. */
  int sign;

  Unsigned(int signAt, int numFields) {
    this.signAt = signAt;
    this.row = new UnsafeRow(numFields);
  }

  /** The row without its sign (valid until the next call). */
  UnsafeRow of(UnsafeRow signed) {
    int size = signed.getSizeInBytes();
    if (buffer.length < size) {
      buffer = new byte[Math.max(size, buffer.length * 2)];
    }
    Platform.copyMemory(signed.getBaseObject(), signed.getBaseOffset(), buffer, Platform.BYTE_ARRAY_OFFSET, size);
    row.pointTo(buffer, Platform.BYTE_ARRAY_OFFSET, size);
    sign = row.getInt(signAt);
    row.setInt(signAt, 0);
    return row;
  }
}
