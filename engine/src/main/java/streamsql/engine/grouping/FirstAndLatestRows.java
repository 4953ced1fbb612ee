package streamsql.engine.grouping;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A partition's rows reduced to each key's earliest and latest (see
 * {@link FirstAndLatestReduction} for why this is exact, {@link KeyTable} for the layout).
 *
 * <p>A key's record holds its latest row and position. Its earliest row is rarely other
 * than the row that was its latest before a second arrived; that one is kept aside, as a
 * row copy, with its position.
 */
final class FirstAndLatestRows extends KeyTable {
  // The record's header: the latest's major position (an index into majors, -1 for
  // null), its length, the room for it, the earliest's index aside (-1: the latest is
  // also the earliest), the latest's minor position.
  private static final int MAJOR = SUB, ROW_LEN = SUB + 4, ROW_CAP = SUB + 8, FIRST = SUB + 12, MINOR = SUB + 16;
  private static final int HEADER = 24;

  /** An earliest row kept aside, with its position. */
  private static final class Aside {
    final UnsafeRow row;
    final int major;
    final long minor;

    Aside(UnsafeRow row, int major, long minor) {
      this.row = row;
      this.major = major;
      this.minor = minor;
    }
  }

  private final UnsafeProjection keyOf;
  private final FirstAndLatestReduction.Reduce how;
  private final List<Aside> asides = new ArrayList<>();
  private final List<UTF8String> majors = new ArrayList<>();
  private UTF8String lastMajor;
  private int lastMajorId = -1;
  private final boolean[] isNew = new boolean[1];
  private final UnsafeRow out;

  FirstAndLatestRows(scala.collection.Iterator<InternalRow> rows, UnsafeProjection keyOf, UnsafeProjection toUnsafe,
                     FirstAndLatestReduction.Reduce how, int numFields) {
    super(rows, toUnsafe, how.maxKeys(), HEADER);
    this.keyOf = keyOf;
    this.how = how;
    this.out = new UnsafeRow(numFields);
  }

  @Override
  boolean add(UnsafeRow row) {
    int major = majorId(how.major(row));
    long minor = how.minor(row);
    UnsafeRow key = keyOf.apply(row);
    int e = entry(key.getBaseObject(), key.getBaseOffset(), key.getSizeInBytes(), row.getSizeInBytes(), isNew);
    if (e < 0) {
      return false;
    }
    int o = recordOf[e];
    if (isNew[0]) {
      Platform.putInt(arena, at(o + ROW_CAP), row.getSizeInBytes());
      Platform.putInt(arena, at(o + FIRST), -1);
      writeLatest(o, row, major, minor);
      return true;
    }
    int first = Platform.getInt(arena, at(o + FIRST));
    int latestMajor = Platform.getInt(arena, at(o + MAJOR));
    long latestMinor = Platform.getLong(arena, at(o + MINOR));
    if (compare(major, minor, latestMajor, latestMinor) >= 0) {
      if (row.getSizeInBytes() > Platform.getInt(arena, at(o + ROW_CAP))) {
        if (!move(e, row.getSizeInBytes(), Platform.getInt(arena, at(o + ROW_LEN)))) {
          return false;
        }
        o = recordOf[e];
        Platform.putInt(arena, at(o + ROW_CAP), row.getSizeInBytes());
      }
      if (first < 0) {  // the latest becomes the earliest, kept aside
        asides.add(new Aside(latest(o).copy(), latestMajor, latestMinor));
        Platform.putInt(arena, at(o + FIRST), asides.size() - 1);
      }
      writeLatest(o, row, major, minor);
      return true;
    }
    Aside earliest = first < 0 ? null : asides.get(first);
    if (compare(major, minor, first < 0 ? latestMajor : earliest.major, first < 0 ? latestMinor : earliest.minor) < 0) {
      Aside now = new Aside(row.copy(), major, minor);
      if (first < 0) {
        asides.add(now);
        Platform.putInt(arena, at(o + FIRST), asides.size() - 1);
      } else {
        asides.set(first, now);
      }
    }
    return true;
  }

  @Override
  UnsafeRow emit(int entry, int part) {
    int o = recordOf[entry];
    int first = Platform.getInt(arena, at(o + FIRST));
    if (part == 0 && first >= 0) {
      return asides.get(first).row;
    }
    return part == 0 || (part == 1 && first >= 0) ? latest(o) : null;
  }

  @Override
  void cleared() {
    asides.clear();
  }

  private void writeLatest(int o, UnsafeRow row, int major, long minor) {
    Platform.putInt(arena, at(o + MAJOR), major);
    Platform.putLong(arena, at(o + MINOR), minor);
    Platform.putInt(arena, at(o + ROW_LEN), row.getSizeInBytes());
    Platform.copyMemory(row.getBaseObject(), row.getBaseOffset(), arena, at(payloadAt(o)), row.getSizeInBytes());
  }

  private UnsafeRow latest(int o) {
    out.pointTo(arena, at(payloadAt(o)), Platform.getInt(arena, at(o + ROW_LEN)));
    return out;
  }

  /** The major position's index in {@link #majors} (-1: null). */
  private int majorId(UTF8String major) {
    if (major == null) {
      return -1;
    }
    if (!major.equals(lastMajor)) {  // a partition's rows mostly share theirs (a Kafka partition, a file)
      int id = majors.indexOf(major);
      if (id < 0) {
        majors.add(major.copy());
        id = majors.size() - 1;
      }
      lastMajor = majors.get(id);
      lastMajorId = id;
    }
    return lastMajorId;
  }

  private int compare(int majorA, long minorA, int majorB, long minorB) {
    return FirstAndLatestReduction.compare(majorA < 0 ? null : majors.get(majorA), minorA,
        majorB < 0 ? null : majors.get(majorB), minorB);
  }
}
