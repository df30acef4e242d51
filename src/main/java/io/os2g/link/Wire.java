package io.os2g.link;

import io.os2g.staging.ChunkKey;
import io.os2g.staging.ExtentIndex;
import io.os2g.staging.ReservedPages;
import io.os2g.store.Listing;
import io.os2g.store.ObjectSummary;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Frames of the split-mode protocol: {@code int length, byte type, long id, payload}, big-endian,
 * strings as UTF-8 with a 4-byte length. A frame is written whole under one lock, so
 * completions from many threads interleave by frame, never by byte.
 */
final class Wire {

    /** "OS2G": the first bytes of a hello, so a stranger on the socket is told apart from an old version. */
    static final int MAGIC = 0x4f533247;
    /** Bumped whenever a message changes; both ends must agree. */
    static final int VERSION = 9;
    private static final int MAX_FRAME = 256 << 20;
    static final long SOON_MILLIS = 2;
    /**
     * The bound of {@link #sendLater}: a released handle's state and pins stay this long longer at most,
     * and counters of READs the agent replied to lag this long. Each bound is a wake-up of both ends
     * while frames flow, so it is long enough to batch many small files' frames.
     */
    static final long LATER_MILLIS = 200;
    private static final int SOON_MAX_BYTES = 16 * 1024;
    /** Writes the frames sent soon, for every connection of the process: one daemon thread. */
    private static final ScheduledExecutorService FLUSHER = Executors.newSingleThreadScheduledExecutor(
            Thread.ofPlatform().daemon().name("os2g-link-flush").factory());

    /** Platform threads that write frames sent from virtual threads ({@link #onPlatformThread}). */
    private static final java.util.concurrent.ExecutorService WRITERS = Executors.newCachedThreadPool(
            Thread.ofPlatform().daemon().name("os2g-link-write-", 0).factory());

    private final Input buffered;
    private final DataInputStream in;
    private final OutputStream out;
    private final java.nio.channels.ReadableByteChannel rawIn;
    private final java.nio.channels.WritableByteChannel rawOut;
    private final Object writeLock = new Object();
    /** Frames held by {@link #sendSoon} and {@link #sendLater} until they are written; guarded by {@link #writeLock}. */
    private final ByteArrayOutputStream soon = new ByteArrayOutputStream();
    /** The thread that reads this wire: it writes the frames it sent soon itself, before it waits for input. */
    private volatile Thread receiver;
    /** Whether {@link #receiver} holds frames that no write has taken yet. */
    private volatile boolean receiverHolds;
    /**
     * System.nanoTime() by which the flusher's next scheduled run writes what is held; 0 when none is
     * scheduled. Guarded by {@link #writeLock}.
     */
    private long flushDue;

    /** A wire over plain streams (tests, scripted peers). */
    Wire(InputStream in, OutputStream out) {
        this(new LinkStream(in, out, java.nio.channels.Channels.newChannel(in), java.nio.channels.Channels.newChannel(out),
                () -> { }, "streams", false));
    }

    Wire(LinkStream link) {
        this.buffered = new Input(link.in());
        this.in = new DataInputStream(buffered);
        this.out = link.out();
        this.rawIn = link.rawIn();
        this.rawOut = link.rawOut();
    }

    /** The frames' read buffer, which says how many bytes it holds that the link's channel no longer does. */
    private static final class Input extends java.io.BufferedInputStream {
        Input(InputStream in) {
            super(in, 64 * 1024);
        }

        synchronized int buffered() {
            return count - pos;
        }
    }

    /** Writes the bytes that follow a frame, straight to the link's channel. */
    @FunctionalInterface
    interface Body {
        void writeTo(java.nio.channels.WritableByteChannel to) throws IOException;
    }

    /**
     * Sends a frame followed by {@code length} bytes that {@code body} writes (a posted chunk, a written
     * part): the frame says how many. Nothing else goes between them.
     */
    void send(long id, Message message, long length, Body body) throws IOException {
        byte[] frame = frame(id, message);
        if (Thread.currentThread().isVirtual()) {
            onPlatformThread(() -> writeFrameAndBody(frame, length, body));
            return;
        }
        writeFrameAndBody(frame, length, body);
    }

    private void writeFrameAndBody(byte[] frame, long length, Body body) throws IOException {
        synchronized (writeLock) {
            soon.write(frame);
            writeSoon();
            if (length > 0) {
                body.writeTo(rawOut);
            }
        }
    }

    /**
     * The {@code length} bytes that follow the frame just received, as a channel: what the frame buffer
     * holds first, then straight from the link. Read them all (or {@link #skip} them) before the next frame.
     */
    java.nio.channels.ReadableByteChannel bytes(long length) {
        return new java.nio.channels.ReadableByteChannel() {
            long left = length;

            @Override
            public int read(java.nio.ByteBuffer dst) throws IOException {
                if (left == 0) {
                    return -1;
                }
                int want = (int) Math.min(left, dst.remaining());
                int n;
                int held = buffered.buffered();
                if (held > 0) {
                    byte[] part = new byte[Math.min(want, held)];
                    n = buffered.read(part, 0, part.length);
                    if (n > 0) {
                        dst.put(part, 0, n);
                    }
                } else {
                    int limit = dst.limit();
                    dst.limit(dst.position() + want);
                    try {
                        n = rawIn.read(dst);
                    } finally {
                        dst.limit(limit);
                    }
                }
                if (n < 0) {
                    throw new EOFException("the link closed with " + left + " bytes of a post to come");
                }
                left -= n;
                return n;
            }

            @Override
            public boolean isOpen() {
                return true;
            }

            @Override
            public void close() {
            }
        };
    }

    /** Reads and drops the {@code length} bytes that follow the frame just received (a post nobody takes). */
    void skip(long length) throws IOException {
        java.nio.channels.ReadableByteChannel bytes = bytes(length);
        java.nio.ByteBuffer sink = java.nio.ByteBuffer.allocate((int) Math.min(length, 64 * 1024));
        for (long left = length; left > 0; ) {
            sink.clear().limit((int) Math.min(sink.capacity(), left));
            left -= bytes.read(sink);
        }
    }

    /** A received frame. */
    record Frame(long id, Message message) {
    }

    void send(long id, Message message) throws IOException {
        byte[] frame = frame(id, message);
        if (Thread.currentThread().isVirtual()) {
            onPlatformThread(() -> writeFrame(frame));
            return;
        }
        writeFrame(frame);
    }

    private void writeFrame(byte[] frame) throws IOException {
        synchronized (writeLock) {
            if (soon.size() > 0) {
                // the frames held go first, in the same write: the order on the wire is the order sent
                soon.write(frame);
                writeSoon();
                return;
            }
            out.write(frame);
            out.flush();
        }
    }

    /**
     * Runs a virtual thread's write on a platform thread, and waits for it. A virtual thread that
     * writes to a blocking socket channel makes the JDK turn its descriptor non-blocking for good;
     * then each wait of the platform thread reading the other direction becomes read(2), EAGAIN,
     * poll(2), read(2) (the agent's link reader paid that at every wake-up). Virtual threads send
     * rarely here (listings, answers after a fetch), so the hand-off costs little.
     */
    private static void onPlatformThread(Write write) throws IOException {
        try {
            WRITERS.submit(() -> {
                write.run();
                return null;
            }).get();
        } catch (java.util.concurrent.ExecutionException e) {
            throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted while sending");
        }
    }

    /** A write to the wire, for {@link #onPlatformThread}. */
    @FunctionalInterface
    private interface Write {
        void run() throws IOException;
    }

    /**
     * Sends a frame soon instead of at once, with the others sent soon in the meantime: one write, and
     * one wake-up of the peer's reader, for a burst of answers (the agent's failed READs, which the
     * shim answers with their errno). Sent by the thread that reads this wire, the frames go when it
     * next waits for input (the end of the burst of requests it is answering); sent by any other
     * thread, within {@link #SOON_MILLIS}, by the flusher.
     */
    void sendSoon(long id, Message message) throws IOException {
        hold(frame(id, message), SOON_MILLIS);
    }

    /**
     * Sends a frame with the next frame sent, or within {@link #LATER_MILLIS} when none is: for news the
     * peer needs in order but not at once (the shim's opens and releases, which then ride with a READ's
     * request instead of a write and a wake-up of the agent each; the agent's "READ answered", which
     * then reach the shim in one write and one wake-up per batch). The thread that reads this wire
     * holds them past its next wait too.
     */
    void sendLater(long id, Message message) throws IOException {
        hold(frame(id, message), LATER_MILLIS);
    }

    private void hold(byte[] frame, long withinMillis) throws IOException {
        // the reader's frames sent soon go when it next waits; sent later, they wait for the flusher too
        boolean byReceiver = Thread.currentThread() == receiver && withinMillis <= SOON_MILLIS;
        long due = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(withinMillis);
        boolean schedule = false;
        boolean full;
        synchronized (writeLock) {
            soon.write(frame);
            full = soon.size() >= SOON_MAX_BYTES;
            if (full && !Thread.currentThread().isVirtual()) {
                writeSoon();
                return;
            }
            if (byReceiver) {
                // the reader's own frames need no timer: waking the flusher cost the agent more CPU per
                // small file than the write itself
                receiverHolds = true;
            } else if (!full && (flushDue == 0 || due - flushDue < 0)) {
                // one run scheduled at a time, unless this frame is due before it
                flushDue = due;
                schedule = true;
            }
        }
        if (full) {
            FLUSHER.execute(this::flushSoon); // now, but on a platform thread (see onPlatformThread)
        } else if (schedule) {
            FLUSHER.schedule(this::flushSoon, withinMillis, TimeUnit.MILLISECONDS);
        }
    }

    private void flushSoon() {
        try {
            synchronized (writeLock) {
                flushDue = 0;
                writeSoon();
            }
        } catch (IOException e) {
            // the connection broke: its reader sees it and ends the session
        }
    }

    /** Writes the frames held for soon, if any; under {@link #writeLock}. */
    private void writeSoon() throws IOException {
        if (soon.size() > 0) {
            soon.writeTo(out);
            soon.reset();
            out.flush();
        }
    }

    private static byte[] frame(long id, Message message) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64);
        DataOutputStream body = new DataOutputStream(bytes);
        body.writeInt(0); // length, filled in below
        body.writeByte(type(message));
        body.writeLong(id);
        write(body, message);
        body.flush();
        byte[] frame = bytes.toByteArray();
        int length = frame.length - 4;
        frame[0] = (byte) (length >>> 24);
        frame[1] = (byte) (length >>> 16);
        frame[2] = (byte) (length >>> 8);
        frame[3] = (byte) length;
        return frame;
    }

    /**
     * The next frame; EOFException when the peer closed the connection. One thread reads a wire: before
     * it waits for the peer, it writes the frames it sent soon.
     */
    Frame receive() throws IOException {
        receiver = Thread.currentThread();
        // only with frames of its own held: a reader that waited for the lock of writers blocked on a
        // full socket could close a circle with the peer's reader
        if (receiverHolds && in.available() == 0) {
            synchronized (writeLock) {
                receiverHolds = false;
                writeSoon();
            }
        }
        int length = in.readInt();
        if (length < 9 || length > MAX_FRAME) {
            throw new IOException("bad frame length " + length);
        }
        byte type = in.readByte();
        long id = in.readLong();
        return new Frame(id, read(type, in));
    }

    private static byte type(Message m) {
        return switch (m) {
            case Message.Hello h -> 1;
            case Message.Welcome w -> 2;
            case Message.Refused r -> 3;
            case Message.ListPrefix l -> 4;
            case Message.Listed l -> 5;
            case Message.Open o -> 6;
            case Message.Read r -> 8;
            case Message.Done d -> 9;
            case Message.Failed f -> 10;
            case Message.Release r -> 11;
            case Message.Stats s -> 12;
            case Message.StatsReply s -> 13;
            case Message.Prefetch p -> 14;
            case Message.Lend l -> 15;
            case Message.ReplyToRead a -> 16;
            case Message.ReadReplied a -> 17;
            case Message.BeginWrite b -> 18;
            case Message.Began b -> 19;
            case Message.NextPart n -> 20;
            case Message.PartPages p -> 21;
            case Message.PartWritten p -> 22;
            case Message.FlushWrite f -> 23;
            case Message.FinishWrite f -> 24;
            case Message.Published p -> 25;
            case Message.AbortWrite a -> 26;
            case Message.DeleteObject d -> 27;
            case Message.MoveObject mo -> 28;
            case Message.Posted p -> 29;
            case Message.Recalled r -> 30;
            case Message.Returned r -> 31;
            case Message.PartBytes p -> 32;
        };
    }

    private static void write(DataOutputStream o, Message m) throws IOException {
        switch (m) {
            case Message.Hello h -> hello(o, h);
            case Message.Welcome w -> layout(o, w.layout());
            case Message.Refused r -> string(o, r.reason());
            case Message.ListPrefix l -> string(o, l.prefix());
            case Message.Listed l -> listing(o, l.listing());
            case Message.Open op -> {
                o.writeLong(op.handle());
                openRequest(o, op.request());
            }
            case Message.Read r -> {
                readRequest(o, r.request());
                o.writeBoolean(r.reply());
            }
            case Message.Done d -> {
            }
            case Message.Lend l -> {
            }
            case Message.ReplyToRead a -> {
                readRequest(o, a.request());
                o.writeLong(a.unique());
            }
            case Message.ReadReplied a -> {
                o.writeLong(a.bytes());
                o.writeInt(a.hits());
                o.writeInt(a.misses());
            }
            case Message.Failed f -> {
                o.writeInt(f.errno());
                string(o, f.message());
            }
            case Message.Release r -> o.writeLong(r.handle());
            case Message.Stats s -> {
            }
            case Message.StatsReply s -> string(o, s.json());
            case Message.Prefetch p -> prefetch(o, p.request());
            case Message.BeginWrite b -> string(o, b.key());
            case Message.Began b -> o.writeLong(b.upload());
            case Message.NextPart n -> {
                o.writeLong(n.upload());
                o.writeInt(n.number());
            }
            case Message.PartPages p -> partPages(o, p.pages());
            case Message.PartWritten p -> {
                o.writeLong(p.upload());
                o.writeInt(p.number());
                o.writeInt(p.length());
            }
            case Message.FlushWrite f -> o.writeLong(f.upload());
            case Message.FinishWrite f -> {
                o.writeLong(f.upload());
                o.writeInt(f.lastPart());
                o.writeInt(f.lastLength());
            }
            case Message.Published p -> summary(o, p.object());
            case Message.AbortWrite a -> o.writeLong(a.upload());
            case Message.DeleteObject d -> string(o, d.key());
            case Message.MoveObject mo -> {
                string(o, mo.from());
                string(o, mo.to());
                o.writeLong(mo.size());
            }
            case Message.Posted p -> held(o, p.chunk());
            case Message.Recalled r -> ints(o, r.slots());
            case Message.Returned r -> ints(o, r.slots());
            case Message.PartBytes p -> {
                o.writeLong(p.upload());
                o.writeInt(p.number());
                o.writeInt(p.length());
            }
        }
    }

    private static Message read(byte type, DataInputStream i) throws IOException {
        return switch (type) {
            case 1 -> hello(i);
            case 2 -> new Message.Welcome(layout(i));
            case 3 -> new Message.Refused(string(i));
            case 4 -> new Message.ListPrefix(string(i));
            case 5 -> new Message.Listed(listing(i));
            case 6 -> new Message.Open(i.readLong(), openRequest(i));
            case 8 -> new Message.Read(readRequest(i), i.readBoolean());
            case 9 -> new Message.Done();
            case 10 -> new Message.Failed(i.readInt(), string(i));
            case 11 -> new Message.Release(i.readLong());
            case 12 -> new Message.Stats();
            case 13 -> new Message.StatsReply(string(i));
            case 14 -> new Message.Prefetch(prefetch(i));
            case 15 -> new Message.Lend();
            case 16 -> new Message.ReplyToRead(readRequest(i), i.readLong());
            case 17 -> new Message.ReadReplied(i.readLong(), i.readInt(), i.readInt());
            case 18 -> new Message.BeginWrite(string(i));
            case 19 -> new Message.Began(i.readLong());
            case 20 -> new Message.NextPart(i.readLong(), i.readInt());
            case 21 -> new Message.PartPages(partPages(i));
            case 22 -> new Message.PartWritten(i.readLong(), i.readInt(), i.readInt());
            case 23 -> new Message.FlushWrite(i.readLong());
            case 24 -> new Message.FinishWrite(i.readLong(), i.readInt(), i.readInt());
            case 25 -> new Message.Published(summary(i));
            case 26 -> new Message.AbortWrite(i.readLong());
            case 27 -> new Message.DeleteObject(string(i));
            case 28 -> new Message.MoveObject(string(i), string(i), i.readLong());
            case 29 -> new Message.Posted(held(i));
            case 30 -> new Message.Recalled(ints(i));
            case 31 -> new Message.Returned(ints(i));
            case 32 -> new Message.PartBytes(i.readLong(), i.readInt(), i.readInt());
            default -> throw new IOException("unknown message type " + type);
        };
    }

    // Each message with more than a few fields has its own pair of methods: write and read stay small,
    // so the JIT compiles the frames a workload sends (a READ's), not every message of the protocol.

    private static void hello(DataOutputStream o, Message.Hello h) throws IOException {
        o.writeInt(MAGIC);
        o.writeInt(h.version());
        MountSpec s = h.spec();
        string(o, s.bucket());
        string(o, s.prefix());
        o.writeLong(s.stagingSize());
        o.writeLong(s.chunkSize());
        o.writeLong(s.maxReadahead());
        o.writeInt(s.dirPrefetch());
        o.writeLong(s.metadataTtlSeconds());
        o.writeBoolean(s.expandTar());
        o.writeBoolean(s.decompress());
        o.writeInt(s.gpuDevice());
        o.writeBoolean(s.writes());
        o.writeBoolean(h.posted());
        o.writeInt(h.held().size());
        for (ExtentIndex.Held c : h.held()) {
            held(o, c);
        }
    }

    private static Message.Hello hello(DataInputStream i) throws IOException {
        int magic = i.readInt();
        if (magic != MAGIC) {
            throw new IOException("not an os2g peer (magic " + Integer.toHexString(magic) + ")");
        }
        int version = i.readInt();
        if (version != VERSION) {
            return new Message.Hello(version, null, false, List.of()); // the rest is another version's: not read
        }
        MountSpec spec = new MountSpec(string(i), string(i), i.readLong(), i.readLong(),
                i.readLong(), i.readInt(), i.readLong(), i.readBoolean(), i.readBoolean(), i.readInt(), i.readBoolean());
        boolean posted = i.readBoolean();
        int n = count(i);
        List<ExtentIndex.Held> held = new ArrayList<>(Math.min(n, 1 << 16));
        for (int k = 0; k < n; k++) {
            held.add(held(i));
        }
        return new Message.Hello(version, spec, posted, held);
    }

    private static void held(DataOutputStream o, ExtentIndex.Held c) throws IOException {
        o.writeInt(c.slot());
        o.writeLong(c.key().inode());
        o.writeLong(c.key().index());
        o.writeLong(c.etagHash());
        o.writeInt(c.length());
        ints(o, c.pages());
    }

    private static ExtentIndex.Held held(DataInputStream i) throws IOException {
        int slot = i.readInt();
        ChunkKey key = new ChunkKey(i.readLong(), i.readLong());
        long etagHash = i.readLong();
        int length = i.readInt();
        if (length < 0) {
            throw new IOException("negative chunk length " + length);
        }
        return new ExtentIndex.Held(slot, key, etagHash, length, ints(i));
    }

    private static void ints(DataOutputStream o, int[] values) throws IOException {
        o.writeInt(values.length);
        for (int v : values) {
            o.writeInt(v);
        }
    }

    private static int[] ints(DataInputStream i) throws IOException {
        int[] values = new int[count(i)];
        for (int k = 0; k < values.length; k++) {
            values[k] = i.readInt();
        }
        return values;
    }

    private static void layout(DataOutputStream o, StagingRegionSpec l) throws IOException {
        string(o, l.directory());
        o.writeLong(l.capacity());
        o.writeInt(l.pageSize());
        o.writeLong(l.segmentSize());
    }

    private static StagingRegionSpec layout(DataInputStream i) throws IOException {
        return new StagingRegionSpec(string(i), i.readLong(), i.readInt(), i.readLong());
    }

    private static void listing(DataOutputStream o, Listing listing) throws IOException {
        string(o, listing.prefix());
        o.writeInt(listing.objects().size());
        for (ObjectSummary s : listing.objects()) {
            string(o, s.key());
            o.writeLong(s.size());
            string(o, s.etag());
            o.writeLong(s.lastModifiedMillis());
        }
        o.writeInt(listing.commonPrefixes().size());
        for (String p : listing.commonPrefixes()) {
            string(o, p);
        }
    }

    private static Listing listing(DataInputStream i) throws IOException {
        String prefix = string(i);
        int n = count(i);
        List<ObjectSummary> objects = new ArrayList<>(n);
        for (int k = 0; k < n; k++) {
            objects.add(new ObjectSummary(string(i), i.readLong(), string(i), i.readLong()));
        }
        int p = count(i);
        List<String> prefixes = new ArrayList<>(p);
        for (int k = 0; k < p; k++) {
            prefixes.add(string(i));
        }
        return new Listing(prefix, objects, prefixes);
    }

    private static void prefetch(DataOutputStream o, PrefetchRequest p) throws IOException {
        o.writeBoolean(p.replace());
        o.writeBoolean(p.warm());
        o.writeInt(p.files().size());
        for (OpenRequest r : p.files()) {
            openRequest(o, r);
        }
    }

    private static PrefetchRequest prefetch(DataInputStream i) throws IOException {
        boolean replace = i.readBoolean();
        boolean warm = i.readBoolean();
        int n = count(i);
        List<OpenRequest> files = new ArrayList<>(Math.min(n, 4096));
        for (int k = 0; k < n; k++) {
            files.add(openRequest(i));
        }
        return new PrefetchRequest(files, replace, warm);
    }

    private static void partPages(DataOutputStream o, ReservedPages p) throws IOException {
        o.writeInt(p.number());
        o.writeInt(p.capacity());
        o.writeInt(p.pages().length);
        for (int page : p.pages()) {
            o.writeInt(page);
        }
    }

    private static ReservedPages partPages(DataInputStream i) throws IOException {
        int number = i.readInt();
        int capacity = i.readInt();
        int[] pages = new int[count(i)];
        for (int k = 0; k < pages.length; k++) {
            pages[k] = i.readInt();
        }
        return new ReservedPages(number, pages, capacity);
    }

    private static void summary(DataOutputStream o, ObjectSummary s) throws IOException {
        string(o, s.key());
        o.writeLong(s.size());
        string(o, s.etag());
        o.writeLong(s.lastModifiedMillis());
    }

    private static ObjectSummary summary(DataInputStream i) throws IOException {
        String key = string(i);
        long size = i.readLong();
        if (size < 0) {
            throw new IOException("negative object size " + size);
        }
        return new ObjectSummary(key, size, string(i), i.readLong());
    }

    private static void readRequest(DataOutputStream o, ReadRequest r) throws IOException {
        o.writeLong(r.handle());
        o.writeLong(r.offset());
        o.writeLong(r.length());
    }

    private static ReadRequest readRequest(DataInputStream i) throws IOException {
        return new ReadRequest(i.readLong(), i.readLong(), i.readLong());
    }

    private static void openRequest(DataOutputStream o, OpenRequest r) throws IOException {
        o.writeLong(r.inode());
        string(o, r.key());
        string(o, r.etag());
        o.writeLong(r.size());
    }

    private static OpenRequest openRequest(DataInputStream i) throws IOException {
        return new OpenRequest(i.readLong(), string(i), string(i), i.readLong());
    }

    private static void string(DataOutputStream o, String s) throws IOException {
        byte[] b = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        o.writeInt(b.length);
        o.write(b);
    }

    private static String string(DataInputStream i) throws IOException {
        int n = count(i);
        byte[] b = new byte[n];
        i.readFully(b);
        return new String(b, java.nio.charset.StandardCharsets.UTF_8);
    }

    private static int count(DataInputStream i) throws IOException {
        int n = i.readInt();
        if (n < 0 || n > MAX_FRAME) {
            throw new EOFException("bad count " + n);
        }
        return n;
    }
}
