package streamsql.engine.grouping;

import java.util.Arrays;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.expressions.XXH64;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.array.ByteArrayMethods;
import scala.collection.AbstractIterator;

/**
 * A partition's rows reduced per key before they are shuffled: the common part of
 * {@link FirstAndLatestRows} and {@link NetRows}, which say what a key's record holds.
 *
 * <p>Layout, for the processor's cache: in a backlog a key's record is rewritten by
 * almost every row and keys come in no order (the seed's topic: 50k keys per task, 50
 * records each), so each row costs the cache misses of finding and rewriting its key's
 * record. Java objects (a map of row objects) made that 4 to 6 misses per row, 40% of the
 * reading task's time. Here a key's record is one run of bytes in an arena (a header, the
 * key's bytes, then what the subclass keeps), found through an open-addressing table of
 * 64-bit key hashes: about two misses.
 *
 * <p>The table is bounded by bytes, not keys: its arena and index arrays live on the
 * JVM's heap outside Spark's accounted memory, and may grow only within {@link
 * TableBudget} (a part of the executor's heap per task slot, and of the heap free at the
 * moment). A key costs what its record costs, measured as rows arrive. When the table may
 * not grow it is passed on whole and starts anew: each subclass's reduction is exact over
 * any split of a key's rows. A partition whose keys hardly repeat (fewer than 5 rows per
 * 4 keys when the table is first full, judged over enough keys) is then passed on as it
 * comes. A key count ({@code maxKeys}) bounds the table only when a test sets one.
 */
abstract class KeyTable extends AbstractIterator<InternalRow> {
  private static final int KEY_LEN = 0;
  /** Where a subclass's header starts in a record; its key follows {@link #header} bytes later. */
  static final int SUB = 8;

  private final scala.collection.Iterator<InternalRow> rows;
  private final UnsafeProjection toUnsafe;
  private final int maxKeys, header;

  private long[] hashes = new long[1024];  // 0: empty slot
  private int[] entryAt = new int[1024];
  protected int[] recordOf = new int[256]; // entry -> record offset, entries in arrival order
  protected int entries;
  protected byte[] arena = new byte[64 << 10];
  private int used;
  private TableBudget budget = TableBudget.ofThisExecutor();
  private boolean full;                    // the index may not grow: pass the table on

  private long rowsIn, keysIn;
  private boolean passing, drained;
  private UnsafeRow pending;               // a row that did not fit: taken after the table is passed on
  private int emitting = -1, emitPart;     // the next entry to pass on, and which of its rows
  private UnsafeRow passed, passedNow;
  private final java.util.List<Runnable> whenDrained = new java.util.ArrayList<>(2);

  /** {@code header}: bytes of the subclass's header, a multiple of 8. */
  KeyTable(scala.collection.Iterator<InternalRow> rows, UnsafeProjection toUnsafe, int maxKeys, int header) {
    this.rows = rows;
    this.toUnsafe = toUnsafe;
    this.maxKeys = maxKeys;
    this.header = header;
  }

  /** What bounds a table, for a plan's node name: a test's key count, or memory. */
  static String bound(int maxKeys) {
    return maxKeys == Integer.MAX_VALUE ? "memory-bounded" : maxKeys + " keys";
  }

  /** Bound the table by this budget instead of the executor's (tests). */
  final KeyTable withBudget(TableBudget b) {
    budget = b;
    return this;
  }

  /** The bytes the table holds now: its arena and its index arrays. */
  final long bytes() {
    return arena.length + hashes.length * 12L + recordOf.length * 4L;
  }

  /** Run this once every row is passed on (a projection given back: {@link Projections}). */
  final KeyTable whenDrained(Runnable then) {
    whenDrained.add(then);
    return this;
  }

  /**
   * Take a row into the table; false when it does not fit (the table is passed on first).
   * A row the table keeps no place for may be passed on as it is ({@link #passOn}).
   */
  abstract boolean add(UnsafeRow row);

  /** The {@code part}th row (0, 1, ...) the entry passes on, or null after its last. */
  abstract UnsafeRow emit(int entry, int part);

  /** The table was passed on: forget what is kept beside it. */
  void cleared() {}

  @Override
  public final boolean hasNext() {
    while (passed == null) {
      if (emitting >= 0) {
        passed = emitNext();
      } else if (drained) {
        whenDrained.forEach(Runnable::run);
        whenDrained.clear();
        return false;
      } else if (passing) {
        if (pending != null) {  // the row that found the table full
          passed = pending;
          pending = null;
        } else if (rows.hasNext()) {
          passed = unsafe(rows.next());  // consumed before the next is read, as Spark's rows are
        } else {
          drained = true;
        }
      } else {
        fill();
      }
    }
    return true;
  }

  @Override
  public final InternalRow next() {
    if (!hasNext()) {
      throw new java.util.NoSuchElementException();
    }
    UnsafeRow r = passed;
    passed = null;
    return r;
  }

  private UnsafeRow unsafe(InternalRow row) {
    return row instanceof UnsafeRow ? (UnsafeRow) row : toUnsafe.apply(row);
  }

  private void fill() {
    if (pending != null) {
      UnsafeRow row = pending;
      pending = null;
      if (!add(row)) {
        throw new IllegalStateException("a row does not fit an empty table");
      }
      if (tookPassedOn()) {
        return;
      }
    }
    while (rows.hasNext()) {
      UnsafeRow row = unsafe(rows.next());
      rowsIn++;
      if (!add(row)) {
        pending = row.copy();
        passOnFull();
        return;
      }
      if (tookPassedOn()) {
        return;
      }
      if (entries >= maxKeys || full) {
        passOnFull();
        return;
      }
    }
    drained = true;
    emitting = 0;
  }

  /**
   * The table is full: pass it on, and from then on pass rows on as they come when its
   * keys hardly repeated (the rows a table of this size saves are too few to pay for it).
   */
  private void passOnFull() {
    passing = keysIn >= 4096 && rowsIn * 4 < keysIn * 5;
    emitting = 0;
  }

  private UnsafeRow emitNext() {
    while (emitting < entries) {
      UnsafeRow r = emit(emitting, emitPart++);
      if (r != null) {
        return r;
      }
      emitting++;
      emitPart = 0;
    }
    emitting = -1;
    emitPart = 0;
    Arrays.fill(hashes, 0L);
    entries = 0;
    used = 0;
    full = false;
    cleared();
    return null;
  }

  /**
   * The entry of the key (bytes at base/offset, length len), or, when absent, a new entry
   * whose record has {@code payload} bytes after the key (-1: the arena is full).
   */
  final int entry(Object base, long offset, int len, int payload, boolean[] isNew) {
    long h = XXH64.hashUnsafeBytes(base, offset, len, 42L);
    h = h == 0 ? 1 : h;
    int mask = hashes.length - 1;
    int i = (int) (h ^ (h >>> 32)) & mask;
    while (hashes[i] != 0) {
      if (hashes[i] == h) {
        int e = entryAt[i];
        int o = recordOf[e];
        if (Platform.getInt(arena, at(o + KEY_LEN)) == len
            && ByteArrayMethods.arrayEquals(arena, at(keyAt(o)), base, offset, len)) {
          isNew[0] = false;
          return e;
        }
      }
      i = (i + 1) & mask;
    }
    int o = allocate(SUB + header + padded(len) + payload);
    if (o < 0) {
      return -1;
    }
    Platform.putInt(arena, at(o + KEY_LEN), len);
    Platform.copyMemory(base, offset, arena, at(keyAt(o)), len);
    if (entries == recordOf.length) {
      recordOf = Arrays.copyOf(recordOf, entries * 2);  // 4 bytes a key: not worth a check
    }
    recordOf[entries] = o;
    hashes[i] = h;
    entryAt[i] = entries;
    keysIn++;
    if (++entries * 2 > hashes.length) {
      if (budget.mayGrow(bytes(), hashes.length * 12L)) {
        grow();
      } else if (entries * 4 > hashes.length * 3) {
        full = true;  // no place for more keys in an index three quarters full
      }
    }
    isNew[0] = true;
    return entries - 1;
  }

  /** After {@link #add}: the row it passed on, if any, becomes the next one out. */
  private boolean tookPassedOn() {
    if (passedNow == null) {
      return false;
    }
    passed = passedNow;
    passedNow = null;
    return true;
  }

  /** From {@link #add}: pass this row on now, as it is (valid until the next row is read). */
  final void passOn(UnsafeRow row) {
    passedNow = row;
  }

  /** The bytes copied into the arena: their offset, or -1 when the arena is full. */
  final int store(Object base, long offset, int len) {
    int o = allocate(padded(len));
    if (o >= 0) {
      Platform.copyMemory(base, offset, arena, at(o), len);
    }
    return o;
  }

  /** Where the record's key starts. */
  final int keyAt(int o) {
    return o + SUB + header;
  }

  /** Where the record's payload (after the key) starts. */
  final int payloadAt(int o) {
    return keyAt(o) + padded(Platform.getInt(arena, at(o + KEY_LEN)));
  }

  /** The entry's record moved to a new place with room for {@code payload} bytes (false: no room). */
  final boolean move(int e, int payload, int keep) {
    int o = recordOf[e];
    int moved = allocate(payloadAt(o) - o + payload);
    if (moved < 0) {
      return false;
    }
    Platform.copyMemory(arena, at(o), arena, at(moved), payloadAt(o) - o + keep);
    recordOf[e] = moved;
    return true;
  }

  /** A new record's offset, or -1 when the arena is full. */
  private int allocate(int size) {
    if (used + (long) size > arena.length) {
      long want = Math.min(Integer.MAX_VALUE - 16, Math.max(used + (long) size, (long) arena.length * 2));
      if (used > 0 && (want < used + (long) size || !budget.mayGrow(bytes(), want - arena.length))) {
        return -1;
      }
      arena = Arrays.copyOf(arena, (int) want);
    }
    int o = used;
    used += size;
    return o;
  }

  private void grow() {
    long[] oldHashes = hashes;
    int[] oldEntries = entryAt;
    hashes = new long[oldHashes.length * 2];
    entryAt = new int[oldHashes.length * 2];
    int mask = hashes.length - 1;
    for (int j = 0; j < oldHashes.length; j++) {
      long h = oldHashes[j];
      if (h != 0) {
        int i = (int) (h ^ (h >>> 32)) & mask;
        while (hashes[i] != 0) {
          i = (i + 1) & mask;
        }
        hashes[i] = h;
        entryAt[i] = oldEntries[j];
      }
    }
  }

  static int padded(int n) {
    return (n + 7) & ~7;
  }

  static long at(int offset) {
    return Platform.BYTE_ARRAY_OFFSET + (long) offset;
  }
}
