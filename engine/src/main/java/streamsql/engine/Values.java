package streamsql.engine;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Objects;

/**
 * Values as the operators see them: Spark's external row values (Integer, Long,
 * BigDecimal, String, java.sql.Timestamp, LocalDateTime, ...), compared in Flink's order
 * and written to the operators' own accumulator bytes.
 *
 * <p>Strings compare by code point, which is Flink's (and Spark's) order of their UTF-8
 * bytes; Java's own String order (UTF-16 code units) differs for characters above the
 * surrogate range.
 */
final class Values {
  private Values() {}

  /** Flink's order of two non-null values of one SQL type. */
  @SuppressWarnings({"unchecked", "rawtypes"})
  static int compare(Object a, Object b) {
    if (a instanceof String && b instanceof String) {
      return compareStrings((String) a, (String) b);
    }
    if (a instanceof byte[] && b instanceof byte[]) {
      return Arrays.compareUnsigned((byte[]) a, (byte[]) b);
    }
    if (a instanceof Comparable) {
      return ((Comparable) a).compareTo(b);
    }
    throw new IllegalArgumentException("values of type " + a.getClass().getName() + " cannot be ordered");
  }

  static int compareStrings(String a, String b) {
    int i = 0, j = 0;
    while (i < a.length() && j < b.length()) {
      int ca = a.codePointAt(i), cb = b.codePointAt(j);
      if (ca != cb) {
        return Integer.compare(ca, cb);
      }
      i += Character.charCount(ca);
      j += Character.charCount(cb);
    }
    return Integer.compare(a.length() - i, b.length() - j);
  }

  /** A sort order over values: direction and where NULLs go. */
  static Comparator<Object> order(boolean descending, boolean nullsFirst) {
    return (a, b) -> {
      if (a == null || b == null) {
        if (a == b) {
          return 0;
        }
        return (a == null) == nullsFirst ? -1 : 1;
      }
      int c = compare(a, b);
      return descending ? -c : c;
    };
  }

  static boolean same(Object a, Object b) {
    if (a instanceof byte[] && b instanceof byte[]) {
      return Arrays.equals((byte[]) a, (byte[]) b);
    }
    return Objects.equals(a, b);
  }

  // ------------------------------------------------------------------ codec

  private static final byte NULL = 0, BOOL = 1, BYTE = 2, SHORT = 3, INT = 4, LONG = 5, FLOAT = 6, DOUBLE = 7,
      DECIMAL = 8, STRING = 9, BINARY = 10, DATE = 11, TIMESTAMP = 12, TIMESTAMP_NTZ = 13, INSTANT = 14,
      LOCAL_DATE = 15;

  /** Writes a scalar value (accumulators hold scalars only: the planner refuses others). */
  static void write(DataOutputStream out, Object v) throws IOException {
    if (v == null) {
      out.writeByte(NULL);
    } else if (v instanceof Boolean) {
      out.writeByte(BOOL);
      out.writeBoolean((Boolean) v);
    } else if (v instanceof Byte) {
      out.writeByte(BYTE);
      out.writeByte((Byte) v);
    } else if (v instanceof Short) {
      out.writeByte(SHORT);
      out.writeShort((Short) v);
    } else if (v instanceof Integer) {
      out.writeByte(INT);
      out.writeInt((Integer) v);
    } else if (v instanceof Long) {
      out.writeByte(LONG);
      out.writeLong((Long) v);
    } else if (v instanceof Float) {
      out.writeByte(FLOAT);
      out.writeFloat((Float) v);
    } else if (v instanceof Double) {
      out.writeByte(DOUBLE);
      out.writeDouble((Double) v);
    } else if (v instanceof BigDecimal) {
      BigDecimal d = (BigDecimal) v;
      out.writeByte(DECIMAL);
      out.writeInt(d.scale());
      byte[] unscaled = d.unscaledValue().toByteArray();
      out.writeInt(unscaled.length);
      out.write(unscaled);
    } else if (v instanceof String) {
      out.writeByte(STRING);
      byte[] bytes = ((String) v).getBytes(StandardCharsets.UTF_8);
      out.writeInt(bytes.length);
      out.write(bytes);
    } else if (v instanceof byte[]) {
      out.writeByte(BINARY);
      out.writeInt(((byte[]) v).length);
      out.write((byte[]) v);
    } else if (v instanceof java.sql.Date) {
      out.writeByte(DATE);
      out.writeLong(((java.sql.Date) v).toLocalDate().toEpochDay());
    } else if (v instanceof java.sql.Timestamp) {
      java.sql.Timestamp t = (java.sql.Timestamp) v;
      out.writeByte(TIMESTAMP);
      out.writeLong(t.getTime());
      out.writeInt(t.getNanos());
    } else if (v instanceof LocalDateTime) {
      LocalDateTime t = (LocalDateTime) v;
      out.writeByte(TIMESTAMP_NTZ);
      out.writeLong(t.toLocalDate().toEpochDay());
      out.writeLong(t.toLocalTime().toNanoOfDay());
    } else if (v instanceof Instant) {
      Instant t = (Instant) v;
      out.writeByte(INSTANT);
      out.writeLong(t.getEpochSecond());
      out.writeInt(t.getNano());
    } else if (v instanceof LocalDate) {
      out.writeByte(LOCAL_DATE);
      out.writeLong(((LocalDate) v).toEpochDay());
    } else {
      throw new IllegalArgumentException("cannot keep a value of type " + v.getClass().getName() + " in an accumulator");
    }
  }

  static Object read(DataInputStream in) throws IOException {
    byte tag = in.readByte();
    switch (tag) {
      case NULL: return null;
      case BOOL: return in.readBoolean();
      case BYTE: return in.readByte();
      case SHORT: return in.readShort();
      case INT: return in.readInt();
      case LONG: return in.readLong();
      case FLOAT: return in.readFloat();
      case DOUBLE: return in.readDouble();
      case DECIMAL: {
        int scale = in.readInt();
        byte[] unscaled = new byte[in.readInt()];
        in.readFully(unscaled);
        return new BigDecimal(new BigInteger(unscaled), scale);
      }
      case STRING: {
        byte[] bytes = new byte[in.readInt()];
        in.readFully(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
      }
      case BINARY: {
        byte[] bytes = new byte[in.readInt()];
        in.readFully(bytes);
        return bytes;
      }
      case DATE: return java.sql.Date.valueOf(LocalDate.ofEpochDay(in.readLong()));
      case TIMESTAMP: {
        java.sql.Timestamp t = new java.sql.Timestamp(in.readLong());
        t.setNanos(in.readInt());
        return t;
      }
      case TIMESTAMP_NTZ: {
        LocalDate day = LocalDate.ofEpochDay(in.readLong());
        return LocalDateTime.of(day, java.time.LocalTime.ofNanoOfDay(in.readLong()));
      }
      case INSTANT: return Instant.ofEpochSecond(in.readLong(), in.readInt());
      case LOCAL_DATE: return LocalDate.ofEpochDay(in.readLong());
      default: throw new IOException("corrupt accumulator: unknown value tag " + tag);
    }
  }
}
