package io.os2g.staging;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * The extent index as shared memory: a file of fixed-size slots in the region's directory, mapped by
 * the agent (the one writer) and by every reader, in its own process or another. A slot holds one
 * staged chunk: its key ({@code inode, chunk}), a hash of its ETag, its length, how many of its bytes
 * from the start are filled, its pages, a pin count and a referenced bit.
 *
 * <p>A chunk lives in one of {@value #WINDOW} slots after the home slot of its key; a reader looks
 * at all of them (no probe chains, so a freed slot needs no tombstone). The slot's state word is
 * the pin count: {@code -1} is free, {@code >= 0} live. Readers pin with a CAS that never succeeds
 * on a free slot, then check the key again: a slot freed and reused between the first look and the
 * pin shows another key and is let go. The writer frees only an unpinned slot (CAS {@code 0 -> -1})
 * and rewrites only a free one, so pinned bytes never change under a reader. Across processes this
 * needs nothing but atomic operations on the shared mapping.
 *
 * <p>A chunk being fetched is published before its bytes arrive, pinned by the writer, and its
 * filled count grows as they land (a release store after the bytes are written), so a reader waits
 * only for the bytes it asks for. A fetch that fails retires its slot (the chunk number becomes
 * {@code -1}): nobody finds it again, and readers holding it keep the bytes they saw filled.
 */
final class ExtentTable {

    static final String FILE = "extents";
    static final int WINDOW = 16;
    private static final long MAGIC = 0x6f73_3267_6578_7431L; // "os2gext1"
    static final int VERSION = 2;

    private static final long HEADER_BYTES = 64;
    private static final long H_MAGIC = 0;
    private static final long H_VERSION = 8;
    private static final long H_SLOTS = 12;
    private static final long H_MAX_PAGES = 16;

    private static final long STATE = 0;
    private static final long REFERENCED = 4;
    private static final long INODE = 8;
    private static final long CHUNK = 16;
    private static final long ETAG = 24;
    private static final long LENGTH = 32;
    private static final long PAGE_COUNT = 36;
    private static final long FILLED = 40;
    private static final long PAGES = 44;

    static final int FREE = -1;
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final MemorySegment table;
    private final int slots;
    private final int maxPages;
    private final long slotBytes;

    private ExtentTable(MemorySegment table, int slots, int maxPages) {
        this.table = table;
        this.slots = slots;
        this.maxPages = maxPages;
        this.slotBytes = slotBytes(maxPages);
    }

    /** Slots rounded to a cache line, so that two readers pinning neighbours do not share one. */
    private static long slotBytes(int maxPages) {
        return (PAGES + 4L * maxPages + 63) & ~63L;
    }

    /** Creates the file in {@code dir} (0600) with every slot free: room for {@code chunks} chunks of up to {@code maxPages} pages. */
    static ExtentTable create(Path dir, int chunks, int maxPages, Arena arena) throws IOException {
        int slots = Math.max(WINDOW, Integer.highestOneBit(Math.max(1, chunks * 2 - 1)) << 1);
        long size = HEADER_BYTES + slots * slotBytes(maxPages);
        Path file = dir.resolve(FILE);
        Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        MemorySegment table;
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            table = channel.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
        }
        ExtentTable t = new ExtentTable(table, slots, maxPages);
        for (int slot = 0; slot < slots; slot++) {
            t.table.set(ValueLayout.JAVA_INT, t.offset(slot) + STATE, FREE);
        }
        table.set(ValueLayout.JAVA_INT, H_VERSION, VERSION);
        table.set(ValueLayout.JAVA_INT, H_SLOTS, slots);
        table.set(ValueLayout.JAVA_INT, H_MAX_PAGES, maxPages);
        VarHandle.releaseFence();
        table.set(ValueLayout.JAVA_LONG, H_MAGIC, MAGIC);
        return t;
    }

    /** Maps the table a writer created in {@code dir}. */
    static ExtentTable attach(Path dir, Arena arena) throws IOException {
        try (FileChannel channel = FileChannel.open(dir.resolve(FILE), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MemorySegment header = channel.map(FileChannel.MapMode.READ_ONLY, 0, HEADER_BYTES, arena);
            if (header.get(ValueLayout.JAVA_LONG, H_MAGIC) != MAGIC || header.get(ValueLayout.JAVA_INT, H_VERSION) != VERSION) {
                throw new IOException("not an os2g extent table of version " + VERSION + ": " + dir.resolve(FILE));
            }
            int slots = header.get(ValueLayout.JAVA_INT, H_SLOTS);
            int maxPages = header.get(ValueLayout.JAVA_INT, H_MAX_PAGES);
            MemorySegment table = channel.map(FileChannel.MapMode.READ_WRITE, 0, HEADER_BYTES + slots * slotBytes(maxPages), arena);
            return new ExtentTable(table, slots, maxPages);
        }
    }

    int maxPages() {
        return maxPages;
    }

    int slotCount() {
        return slots;
    }

    boolean isFree(int slot) {
        return (int) INT.getVolatile(table, offset(slot) + STATE) == FREE;
    }

    private long offset(int slot) {
        return HEADER_BYTES + slot * slotBytes;
    }

    private int home(long inode, long chunk) {
        long h = inode * 0x9E37_79B9_7F4A_7C15L + chunk * 0xC2B2_AE3D_27D4_EB4FL;
        return (int) ((h ^ (h >>> 29)) & (slots - 1));
    }

    /** 64-bit FNV-1a of an ETag: versions of one key are told apart by it. */
    static long etagHash(String etag) {
        long h = 0xcbf2_9ce4_8422_2325L;
        for (int i = 0; i < etag.length(); i++) {
            h = (h ^ etag.charAt(i)) * 0x0100_0000_01b3L;
        }
        return h;
    }

    /** Pins the live slot holding this chunk version; -1 when it is not staged. Any process. */
    int pin(long inode, long chunk, long etagHash) {
        int home = home(inode, chunk);
        for (int i = 0; i < WINDOW; i++) {
            int slot = (home + i) & (slots - 1);
            long base = offset(slot);
            if ((int) INT.getAcquire(table, base + STATE) < 0 || !holds(base, inode, chunk, etagHash)) {
                continue;
            }
            if (!tryPin(slot)) {
                continue;
            }
            if (holds(base, inode, chunk, etagHash)) {
                INT.setOpaque(table, base + REFERENCED, 1);
                return slot;
            }
            unpin(slot); // freed and reused for another chunk between the look and the pin
        }
        return -1;
    }

    private boolean holds(long base, long inode, long chunk, long etagHash) {
        return table.get(ValueLayout.JAVA_LONG, base + INODE) == inode
                && table.get(ValueLayout.JAVA_LONG, base + CHUNK) == chunk
                && table.get(ValueLayout.JAVA_LONG, base + ETAG) == etagHash;
    }

    boolean tryPin(int slot) {
        long at = offset(slot) + STATE;
        for (;;) {
            int pins = (int) INT.getVolatile(table, at);
            if (pins < 0) {
                return false;
            }
            if (INT.compareAndSet(table, at, pins, pins + 1)) {
                return true;
            }
        }
    }

    void unpin(int slot) {
        int before = (int) INT.getAndAdd(table, offset(slot) + STATE, -1);
        if (before <= 0) {
            throw new IllegalStateException("unpin of an unpinned slot " + slot);
        }
    }

    int pinCount(int slot) {
        return Math.max(0, (int) INT.getVolatile(table, offset(slot) + STATE));
    }

    /** Frees a live, unpinned slot (writer only). */
    boolean tryFree(int slot) {
        return INT.compareAndSet(table, offset(slot) + STATE, 0, FREE);
    }

    /** Whether a reader pinned the slot since its referenced bit was last taken, leaving the bit as it is (writer only). */
    boolean referenced(int slot) {
        return (int) INT.getOpaque(table, offset(slot) + REFERENCED) != 0;
    }

    /** Clears the slot's referenced bit; true if a reader pinned it since the last call (writer only). */
    boolean takeReferenced(int slot) {
        long at = offset(slot) + REFERENCED;
        if ((int) INT.getOpaque(table, at) == 0) {
            return false;
        }
        INT.setOpaque(table, at, 0);
        return true;
    }

    /** A free slot in this key's window, or -1 (writer only). */
    int freeSlot(long inode, long chunk) {
        int home = home(inode, chunk);
        for (int i = 0; i < WINDOW; i++) {
            int slot = (home + i) & (slots - 1);
            if ((int) INT.getVolatile(table, offset(slot) + STATE) == FREE) {
                return slot;
            }
        }
        return -1;
    }

    /** The slots of this key's window, home first (writer only: for making room in a full window). */
    int windowSlot(long inode, long chunk, int i) {
        return (home(inode, chunk) + i) & (slots - 1);
    }

    /**
     * Fills a free slot and makes it live (writer only): unpinned with all its bytes filled, or, for a
     * chunk still being fetched ({@code filled < length}), pinned once by the writer, who then reports
     * progress with {@link #setFilled} and lets the pin go when done.
     */
    void publish(int slot, long inode, long chunk, long etagHash, int length, int filled, int[] pages) {
        if (pages.length > maxPages) {
            throw new IllegalArgumentException("chunk of " + pages.length + " pages, table holds " + maxPages);
        }
        long base = offset(slot);
        if ((int) INT.getVolatile(table, base + STATE) != FREE) {
            throw new IllegalStateException("slot " + slot + " is not free");
        }
        table.set(ValueLayout.JAVA_LONG, base + INODE, inode);
        table.set(ValueLayout.JAVA_LONG, base + CHUNK, chunk);
        table.set(ValueLayout.JAVA_LONG, base + ETAG, etagHash);
        table.set(ValueLayout.JAVA_INT, base + LENGTH, length);
        table.set(ValueLayout.JAVA_INT, base + PAGE_COUNT, pages.length);
        MemorySegment.copy(pages, 0, table, ValueLayout.JAVA_INT, base + PAGES, pages.length);
        INT.setRelease(table, base + FILLED, filled);
        INT.setRelease(table, base + REFERENCED, 0);
        INT.setRelease(table, base + STATE, filled < length ? 1 : 0);
    }

    /** Says that the first {@code filled} bytes of a chunk being fetched are in its pages (writer only). */
    void setFilled(int slot, int filled) {
        INT.setRelease(table, offset(slot) + FILLED, filled);
    }

    /** Bytes of the chunk in a pinned slot filled from its start: its length once fetched. */
    int filled(int slot) {
        return (int) INT.getAcquire(table, offset(slot) + FILLED);
    }

    /** Makes a live slot unfindable (its fetch failed); pins already held stay valid (writer only). */
    void retire(int slot) {
        LONG.setRelease(table, offset(slot) + CHUNK, -1L);
    }

    /** The ETag hash of the chunk in a live slot (writer only). */
    long etagHashOf(int slot) {
        return table.get(ValueLayout.JAVA_LONG, offset(slot) + ETAG);
    }

    /** Inode of the chunk in a live slot, and its chunk number (-1 once retired). */
    long inode(int slot) {
        return table.get(ValueLayout.JAVA_LONG, offset(slot) + INODE);
    }

    long chunk(int slot) {
        return (long) LONG.getAcquire(table, offset(slot) + CHUNK);
    }

    /** Length of the chunk in a pinned slot. */
    int length(int slot) {
        return table.get(ValueLayout.JAVA_INT, offset(slot) + LENGTH);
    }

    /** Page {@code index} of the chunk in a pinned slot. */
    int page(int slot, int index) {
        return table.get(ValueLayout.JAVA_INT, offset(slot) + PAGES + 4L * index);
    }
}
