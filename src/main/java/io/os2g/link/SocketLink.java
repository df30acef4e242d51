package io.os2g.link;

import io.os2g.Errno;
import io.os2g.staging.ExtentIndex;
import io.os2g.staging.PostedRegion;
import io.os2g.staging.ReservedPages;
import io.os2g.staging.StagingConfig;
import io.os2g.staging.StagingView;
import io.os2g.store.Listing;
import java.io.IOException;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shim's end of the split mode: requests to an agent process, and a staging region a staged chunk
 * is read from with no message at all. Over a Unix socket the region is the agent's, mapped here. Over
 * TCP (the agent on a DPU or another node, behind mutual TLS) the region is this host's own: the agent
 * posts each chunk's bytes and this side's link reader receives them into the pages the agent chose,
 * then publishes the chunk ({@link PostedRegion}); recalled chunks are freed once no reader holds them.
 *
 * <p>When the agent goes away, requests in flight fail with EIO at once and new ones fail fast
 * while a background thread dials again every second; once the agent is back, the link opens a new
 * session and reopens handles lazily on their next read. A region of its own keeps serving what it
 * holds meanwhile, and the new session takes it over as it is.
 */
public final class SocketLink implements AgentLink {

    private static final Logger LOG = LoggerFactory.getLogger(SocketLink.class);
    private static final Duration RECONNECT_EVERY = Duration.ofSeconds(1);
    /**
     * How long a write waits for the agent: room for its next part while the store is behind, or the
     * upload of its last parts at close. The agent gives up first (its store retries run out).
     */
    private static final Duration WRITE_DEADLINE = Duration.ofMinutes(10);
    /** Hinted inodes remembered at most (the agent keeps as many hinted files waiting). */
    private static final int MAX_HINTED = 1 << 18;

    private final LinkAddress address;
    private final LinkTls tls;
    /** Where this host's own region goes when the agent posts into it (TCP); null over a Unix socket. */
    private final Path hostStaging;
    private final MountSpec spec;
    /** This host's region, created at the first session over TCP; guarded by {@code this} for replacement. */
    private volatile PostedRegion region;
    /** Pages of written parts the agent handed out, by (upload, part), for posting their bytes (TCP only). */
    private final ConcurrentHashMap<List<Long>, int[]> partPages = new ConcurrentHashMap<>();
    private final java.util.concurrent.ScheduledExecutorService returns = java.util.concurrent.Executors
            .newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().name("os2g-link-returns").factory());
    private final Duration deadline;
    private final AtomicLong ids = new AtomicLong(1);
    private final AtomicLong handles = new AtomicLong(1);
    private final ConcurrentHashMap<Long, LocalHandle> open = new ConcurrentHashMap<>();
    /** Inodes hinted and not opened yet: their opens go to the agent at once. */
    private final Set<Long> hinted = ConcurrentHashMap.newKeySet();
    private volatile Connection current;
    private final AnswerDeadlines deadlines;
    /** Lends the mount's /dev/fuse to each connection's agent; null before the mount, or with agent replies off. */
    private volatile DeviceLender lender;
    private volatile boolean closed;
    private Thread redialer;

    /** A connected session: one socket, one agent-side mount, one mapped region. */
    private final class Connection {
        final LinkStream channel;
        final Wire wire;
        final StagingView view;
        final Path directory;
        final ConcurrentHashMap<Long, CompletableFuture<Message>> pending = new ConcurrentHashMap<>();
        /** Whether the agent holds the lent /dev/fuse and replies to READs. */
        volatile boolean agentReplies;

        Connection(LinkStream channel, Wire wire, StagingView view, Path directory) {
            this.channel = channel;
            this.wire = wire;
            this.view = view;
            this.directory = directory;
        }

        void readReplies() {
            try {
                for (;;) {
                    Wire.Frame frame = wire.receive();
                    switch (frame.message()) {
                        case Message.Posted posted -> receive(wire, posted);
                        case Message.Recalled recalled -> recall(this, recalled.slots());
                        default -> {
                            CompletableFuture<Message> waiting = pending.remove(frame.id());
                            if (waiting != null) {
                                waiting.complete(frame.message());
                            }
                        }
                    }
                }
            } catch (IOException e) {
                lost(this, e);
            }
        }

        Message call(Message request) {
            return call(request, deadline);
        }

        /** Sends {@code request} and waits up to {@code within} for its answer. */
        Message call(Message request, Duration within) {
            long id = ids.getAndIncrement();
            CompletableFuture<Message> reply = new CompletableFuture<>();
            pending.put(id, reply);
            try {
                wire.send(id, request);
                return reply.get(within.toNanos(), TimeUnit.NANOSECONDS);
            } catch (IOException e) {
                lost(this, e);
                throw new LinkException(Errno.EIO, "agent connection lost: " + e.getMessage());
            } catch (TimeoutException e) {
                throw new LinkException(Errno.EIO, "the agent did not answer within " + within.toMillis() + " ms");
            } catch (ExecutionException e) {
                throw e.getCause() instanceof LinkException le ? le : new LinkException(Errno.EIO, String.valueOf(e.getCause()));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new LinkException(Errno.EIO, "interrupted");
            } finally {
                pending.remove(id);
            }
        }
    }

    /** An open file as the shim knows it: its number is the agent's too; reopened on the agent after a reconnect. */
    private static final class LocalHandle {
        final long id;
        final OpenRequest request;
        Connection connection;

        LocalHandle(long id, OpenRequest request) {
            this.id = id;
            this.request = request;
        }
    }

    /** What is tied to each region of this host's own (its GPU registration); null for nothing. */
    private final java.util.function.Function<PostedRegion, AutoCloseable> onRegion;

    private SocketLink(LinkAddress address, LinkTls tls, Path hostStaging, java.util.function.Function<PostedRegion, AutoCloseable> onRegion,
                       MountSpec spec, Duration deadline) {
        this.address = address;
        this.onRegion = onRegion;
        this.tls = tls;
        this.hostStaging = hostStaging;
        this.spec = spec;
        this.deadline = deadline;
        this.deadlines = new AnswerDeadlines(deadline);
    }

    /**
     * Connects and shakes hands.
     *
     * @param deadline how long a request may wait for its answer (the read deadline)
     * @throws LinkException when the agent is not there or refuses the mount (its reason in the message)
     */
    public static SocketLink connect(Path socket, MountSpec spec, Duration deadline) {
        return connect(new LinkAddress.Unix(socket), null, null, null, spec, deadline);
    }

    /**
     * Connects to the agent at {@code address} and shakes hands.
     *
     * @param tls mutual TLS for a TCP address (null only on loopback)
     * @param hostStaging for a TCP address: the directory of this host's own staging region
     * @param onRegion for a TCP address: what to tie to the region once it is made (a GPU registration,
     *     closed before the region goes); null for nothing
     * @throws LinkException when the agent is not there, refuses the peer, or refuses the mount
     */
    public static SocketLink connect(LinkAddress address, LinkTls tls, Path hostStaging,
                                     java.util.function.Function<PostedRegion, AutoCloseable> onRegion, MountSpec spec, Duration deadline) {
        SocketLink link = new SocketLink(address, tls, hostStaging, onRegion, spec, deadline);
        try {
            link.current = link.dial();
        } catch (RuntimeException e) {
            link.deadlines.close();
            link.returns.shutdownNow();
            if (link.region != null) {
                link.region.close();
            }
            throw e;
        }
        return link;
    }

    /** Whether the agent posts into this host's own region (it is on another machine). */
    private boolean posted() {
        return address instanceof LinkAddress.Tcp;
    }

    private LinkStream open() {
        try {
            if (address instanceof LinkAddress.Tcp tcp) {
                if (tls != null) {
                    return TlsHandshake.dial(tcp, tls);
                }
                SocketChannel channel = SocketChannel.open(tcp.socketAddress());
                TlsHandshake.tune(channel);
                return LinkStream.of(channel, address.toString());
            }
            return LinkStream.of(SocketChannel.open(UnixDomainSocketAddress.of(((LinkAddress.Unix) address).path())), address.toString());
        } catch (IOException e) {
            throw new LinkException(Errno.EIO, "no agent at " + address + " (" + e.getMessage() + "); start one with os2g agent --listen " + address);
        }
    }

    private Connection dial() {
        LinkStream link = open();
        try {
            Wire wire = new Wire(link);
            PostedRegion held = region;
            wire.send(0, new Message.Hello(Wire.VERSION, spec, posted(), held == null ? List.of() : held.held()));
            Message answer = wire.receive().message();
            if (answer instanceof Message.Refused refused) {
                throw new LinkException(Errno.EIO, "the agent at " + address + " refused the mount: " + refused.reason());
            }
            if (!(answer instanceof Message.Welcome welcome)) {
                throw new LinkException(Errno.EIO, "the agent at " + address + " answered the hello with " + answer);
            }
            StagingRegionSpec l = welcome.layout();
            StagingConfig shape = new StagingConfig(posted() ? hostStaging : Path.of(l.directory()), l.capacity(), l.pageSize(),
                    l.segmentSize(), deadline);
            StagingView view = posted() ? hostRegion(shape).view() : StagingView.attach(shape, spec.writes());
            Connection connection = new Connection(link, wire, view, Path.of(l.directory()));
            // a platform thread blocks in read(2) itself: on a virtual one every wait for an answer is a
            // trip through the JDK's poller, which cost the shim more CPU than the answers themselves
            Thread.ofPlatform().daemon().name("os2g-link-replies").start(connection::readReplies);
            if (!posted()) {
                lendTo(connection);
            }
            return connection;
        } catch (IOException | RuntimeException e) {
            link.close();
            if (e instanceof LinkException le) {
                throw le;
            }
            throw new LinkException(Errno.EIO, "handshake with the agent at " + address + " failed: " + e.getMessage());
        }
    }

    /**
     * This host's region in the agent's layout: the one it has, or a new one (the first session, or an
     * agent that laid it out otherwise: then what it held is dropped, and the session is dialled again).
     */
    private synchronized PostedRegion hostRegion(StagingConfig shape) {
        PostedRegion r = region;
        if (r != null) {
            StagingConfig c = r.config();
            if (c.capacity() == shape.capacity() && c.pageSize() == shape.pageSize() && c.segmentSize() == shape.segmentSize()) {
                return r;
            }
            region = null;
            r.close();
            throw new LinkException(Errno.EIO, "the agent at " + address + " laid out the staging region anew; dialling again");
        }
        PostedRegion created = PostedRegion.create(shape, spec.chunkSize());
        if (onRegion != null) {
            try {
                created.attach(onRegion.apply(created));
            } catch (RuntimeException e) {
                created.close();
                throw e;
            }
        }
        region = created;
        return created;
    }

    /** Takes a posted chunk's bytes into this host's region (on the link's reader thread). */
    private void receive(Wire wire, Message.Posted posted) throws IOException {
        ExtentIndex.Held c = posted.chunk();
        PostedRegion r = region;
        if (r == null) {
            throw new IOException("a post with no staging region here");
        }
        r.receive(c.slot(), c.key(), c.etagHash(), c.length(), c.pages(), wire.bytes(c.length()));
    }

    /** Frees recalled chunks no reader holds and tells the agent; the rest are returned once let go. */
    private void recall(Connection connection, int[] slots) throws IOException {
        PostedRegion r = region;
        int[] freed = new int[slots.length];
        int n = 0;
        for (int slot : slots) {
            if (r == null || r.recall(slot)) {
                freed[n++] = slot;
            }
        }
        if (n > 0) {
            connection.wire.sendSoon(0, new Message.Returned(java.util.Arrays.copyOf(freed, n)));
        }
        if (r != null && n < slots.length) {
            returns.schedule(() -> returnLater(connection), 2, TimeUnit.MILLISECONDS);
        }
    }

    /** Returns recalled chunks readers have let go of since; looks again soon while some are still held. */
    private void returnLater(Connection connection) {
        PostedRegion r = region;
        if (r == null || current != connection) {
            return;
        }
        int[] freed = r.returnable();
        try {
            if (freed.length > 0) {
                connection.wire.send(0, new Message.Returned(freed));
            }
        } catch (IOException e) {
            lost(connection, e);
            return;
        }
        if (r.recallsPending()) {
            returns.schedule(() -> returnLater(connection), 5, TimeUnit.MILLISECONDS);
        }
    }

    private void lost(Connection connection, IOException why) {
        synchronized (this) {
            if (current != connection) {
                return;
            }
            current = null;
        }
        connection.channel.close();
        LinkException failure = new LinkException(Errno.EIO, "agent connection lost");
        connection.pending.values().forEach(f -> f.completeExceptionally(failure));
        // readers copying from it at this moment fail their access and report EIO; nothing is torn
        connection.view.close();
        if (closed) {
            return;
        }
        LOG.warn("lost the agent at {} ({}); reads of what is not staged fail with EIO until it is back", address, why.toString());
        startRedialing();
    }

    private synchronized void startRedialing() {
        if (redialer != null && redialer.isAlive()) {
            return;
        }
        // a platform thread: a virtual one connecting the socket would leave it non-blocking (see Wire)
        redialer = Thread.ofPlatform().daemon().name("os2g-link-redial").start(() -> {
            while (!closed && current == null) {
                try {
                    Thread.sleep(RECONNECT_EVERY);
                    Connection connection = dial();
                    synchronized (this) {
                        if (closed) {
                            connection.channel.close();
                            return;
                        }
                        current = connection;
                    }
                    LOG.info("reconnected to the agent at {}", address);
                } catch (RuntimeException e) {
                    LOG.debug("agent still away: {}", e.getMessage());
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
    }

    private Connection connection() {
        Connection c = current;
        if (c == null) {
            throw new LinkException(Errno.EIO, "the agent at " + address + " is not connected");
        }
        return c;
    }

    @Override
    public StagingView staging() {
        PostedRegion r = region;
        return r != null ? r.view() : connection().view; // a region of its own serves while the agent is away
    }

    /** One listing, answered by the agent from the object store. */
    public Listing list(String prefix) {
        Message reply = connection().call(new Message.ListPrefix(prefix));
        return switch (reply) {
            case Message.Listed listed -> listed.listing();
            case Message.Failed failed -> throw new LinkException(failed.errno(), failed.message());
            default -> throw new LinkException(Errno.EIO, "unexpected answer to a listing: " + reply);
        };
    }

    @Override
    public long beginWrite(String key) {
        return switch (connection().call(new Message.BeginWrite(key))) {
            case Message.Began began -> began.upload();
            case Message.Failed failed -> throw new LinkException(failed.errno(), failed.message());
            case Message other -> throw new LinkException(Errno.EIO, "unexpected answer to a write: " + other);
        };
    }

    @Override
    public ReservedPages nextPart(long upload, int number) {
        return switch (connection().call(new Message.NextPart(upload, number), WRITE_DEADLINE)) {
            case Message.PartPages pages -> {
                if (posted()) {
                    partPages.put(List.of(upload, (long) number), pages.pages().pages());
                }
                yield pages.pages();
            }
            case Message.Failed failed -> throw new LinkException(failed.errno(), failed.message());
            case Message other -> throw new LinkException(Errno.EIO, "unexpected answer to a write: " + other);
        };
    }

    @Override
    public void partWritten(long upload, int number, int length) {
        postPart(upload, number, length);
        send(new Message.PartWritten(upload, number, length));
    }

    /** Over TCP: sends what was written into a part's pages here, ahead of the message that says it is written. */
    private void postPart(long upload, int number, int length) {
        int[] pages = partPages.remove(List.of(upload, (long) number));
        PostedRegion r = region;
        if (!posted() || pages == null || r == null || length <= 0) {
            return;
        }
        Connection connection = connection();
        try {
            connection.wire.send(ids.getAndIncrement(), new Message.PartBytes(upload, number, length), length,
                    to -> r.sendPart(pages, length, to));
        } catch (IOException e) {
            lost(connection, e);
            throw new LinkException(Errno.EIO, "agent connection lost: " + e.getMessage());
        }
    }

    @Override
    public void flushWrite(long upload) {
        switch (connection().call(new Message.FlushWrite(upload), WRITE_DEADLINE)) {
            case Message.Done done -> {
            }
            case Message.Failed failed -> throw new LinkException(failed.errno(), failed.message());
            case Message other -> throw new LinkException(Errno.EIO, "unexpected answer to fsync: " + other);
        }
    }

    @Override
    public PublishedObject finishWrite(long upload, int lastPart, int lastLength) {
        if (lastPart > 0) {
            postPart(upload, lastPart, lastLength);
        }
        partPages.keySet().removeIf(k -> k.get(0) == upload);
        return published(connection().call(new Message.FinishWrite(upload, lastPart, lastLength), WRITE_DEADLINE));
    }

    @Override
    public void abortWrite(long upload) {
        partPages.keySet().removeIf(k -> k.get(0) == upload);
        Connection connection = current;
        if (connection != null) {
            try {
                connection.wire.send(ids.getAndIncrement(), new Message.AbortWrite(upload));
            } catch (IOException e) {
                lost(connection, e); // the agent's end aborts what the session held
            }
        }
    }

    @Override
    public void deleteObject(String key) {
        switch (connection().call(new Message.DeleteObject(key), WRITE_DEADLINE)) {
            case Message.Done done -> {
            }
            case Message.Failed failed -> throw new LinkException(failed.errno(), failed.message());
            case Message other -> throw new LinkException(Errno.EIO, "unexpected answer to a delete: " + other);
        }
    }

    @Override
    public PublishedObject moveObject(String from, String to, long size) {
        return published(connection().call(new Message.MoveObject(from, to, size), WRITE_DEADLINE));
    }

    private static PublishedObject published(Message answer) {
        return switch (answer) {
            case Message.Published published -> PublishedObject.of(published.object());
            case Message.Failed failed -> throw new LinkException(failed.errno(), failed.message());
            case Message other -> throw new LinkException(Errno.EIO, "unexpected answer to a write: " + other);
        };
    }

    /** Sends a message that has no answer. */
    private void send(Message message) {
        Connection connection = connection();
        try {
            connection.wire.send(ids.getAndIncrement(), message);
        } catch (IOException e) {
            lost(connection, e);
            throw new LinkException(Errno.EIO, "agent connection lost: " + e.getMessage());
        }
    }

    /** The agent's counters for this mount, as a JSON object. */
    public String agentStats() {
        Message reply = connection().call(new Message.Stats());
        if (reply instanceof Message.StatsReply stats) {
            return stats.json();
        }
        throw new LinkException(Errno.EIO, "unexpected answer to stats: " + reply);
    }

    /**
     * Opens lazily: the agent hears of the file with its first read or hint, in the same stream, ahead
     * of it, so a file the page cache serves costs no message. A file hinted through
     * {@code /.os2g/prefetch} is announced now, even if no READ follows (the page cache has it): its open
     * is what moves the agent's prefetching on. It goes with the next frame, its first READ's as a rule.
     */
    @Override
    public long open(OpenRequest request) {
        long id = handles.getAndIncrement();
        LocalHandle handle = new LocalHandle(id, request);
        open.put(id, handle);
        Connection connection = current;
        if (connection != null && hinted.remove(request.inode())) {
            try {
                bind(handle, connection);
            } catch (IOException e) {
                lost(connection, e);
            }
        }
        return id;
    }

    /**
     * Sends the open to this connection's agent session if it has not had it yet; no answer is awaited.
     * It goes with the next frame sent (a READ's, at once, when this open is bound for one).
     */
    private long bind(LocalHandle handle, Connection connection) throws IOException {
        synchronized (handle) {
            if (handle.connection != connection) {
                connection.wire.sendLater(ids.getAndIncrement(), new Message.Open(handle.id, handle.request));
                handle.connection = connection;
            }
            return handle.id;
        }
    }

    @Override
    public CompletableFuture<Void> stage(ReadRequest request) {
        return request(request, agentHandle -> new Message.Read(new ReadRequest(agentHandle, request.offset(), request.length()), true),
                answer -> answer instanceof Message.Done ? null : unexpected("a read", answer), false, null);
    }

    @Override
    public boolean agentReplies() {
        Connection connection = current;
        return connection != null && connection.agentReplies;
    }

    /** Bounded by the read deadline: a READ nobody answers would hang its reader. */
    @Override
    public void replyInAgent(ReadRequest request, long unique, BiConsumer<RepliedRead, Throwable> done) {
        request(request, agentHandle -> new Message.ReplyToRead(new ReadRequest(agentHandle, request.offset(), request.length()), unique),
                answer -> answer instanceof Message.ReadReplied r ? new RepliedRead(r.bytes(), r.hits(), r.misses()) : unexpected("a read", answer),
                true, done);
    }

    /**
     * Sends the message {@code build} makes for the handle's number on this connection's agent and maps
     * its answer; a Failed answer fails the future with its errno. {@code done}, when given, is attached
     * before the message goes out, so the reader thread runs it as it takes the answer.
     */
    private <T> CompletableFuture<T> request(ReadRequest request, java.util.function.LongFunction<Message> build,
            java.util.function.Function<Message, T> map, boolean bounded, BiConsumer<? super T, ? super Throwable> done) {
        CompletableFuture<Message> reply = new CompletableFuture<>();
        CompletableFuture<T> answered = reply.thenApply(answer -> {
            if (answer instanceof Message.Failed failed) {
                throw new LinkException(failed.errno(), failed.message());
            }
            return map.apply(answer);
        });
        if (done != null) {
            answered.whenComplete(done);
        }
        try {
            Connection connection = connection();
            LocalHandle handle = open.get(request.handle());
            if (handle == null) {
                throw new LinkException(Errno.EBADF, "unknown handle " + request.handle());
            }
            long id = ids.getAndIncrement();
            connection.pending.put(id, reply);
            try {
                connection.wire.send(id, build.apply(bind(handle, connection)));
            } catch (IOException e) {
                connection.pending.remove(id);
                lost(connection, e);
                throw new LinkException(Errno.EIO, "agent connection lost");
            }
            if (bounded) {
                // the reader drops the entry when the answer comes; one failed by its deadline goes here
                reply.whenComplete((answer, failure) -> connection.pending.remove(id));
                deadlines.watch(reply);
            }
        } catch (LinkException e) {
            reply.completeExceptionally(e);
        }
        return answered;
    }

    private static <T> T unexpected(String what, Message answer) {
        throw new LinkException(Errno.EIO, "unexpected answer to " + what + ": " + answer);
    }

    /**
     * Lends the mount's /dev/fuse descriptor to the agent through {@code lender} (now, and again after
     * each reconnect), so that it replies to READs itself: the shim then forwards a READ's number
     * instead of its bytes. Where the agent cannot take it, the shim goes on replying itself.
     */
    public void lendDevice(DeviceLender lender) {
        this.lender = lender;
        Connection connection = current;
        if (connection != null) {
            lendTo(connection);
        }
    }

    private void lendTo(Connection connection) {
        DeviceLender l = lender;
        if (l == null) {
            return;
        }
        try {
            l.lendTo(connection.directory);
            connection.call(new Message.Lend());
            connection.agentReplies = true;
            LOG.debug("the agent at {} replies to this mount's READs", address);
        } catch (IOException | RuntimeException e) { // never a failed mount: the shim can reply itself
            LOG.info("the agent at {} does not reply to READs itself ({}); the shim replies", address, e.getMessage());
        }
    }

    @Override
    public void hint(ReadRequest request) {
        Connection connection = current;
        LocalHandle handle = open.get(request.handle());
        if (connection == null || handle == null) {
            return;
        }
        try {
            long agentHandle = bind(handle, connection);
            connection.wire.send(ids.getAndIncrement(), new Message.Read(new ReadRequest(agentHandle, request.offset(), request.length()), false));
        } catch (IOException e) {
            lost(connection, e);
        }
    }

    @Override
    public void prefetch(PrefetchRequest request) {
        Connection connection = current;
        if (connection == null) {
            throw new LinkException(Errno.EIO, "the agent is not connected");
        }
        if (!request.warm()) {
            if (request.replace()) {
                hinted.clear();
            }
            for (OpenRequest f : request.files()) {
                if (hinted.size() >= MAX_HINTED) {
                    break; // the agent keeps no more than this waiting either; later opens go with their first read
                }
                hinted.add(f.inode());
            }
        }
        try {
            connection.wire.send(ids.getAndIncrement(), new Message.Prefetch(request));
        } catch (IOException e) {
            lost(connection, e);
            throw new LinkException(Errno.EIO, "lost the agent while sending hints: " + e.getMessage());
        }
    }

    @Override
    public void release(long handle) {
        LocalHandle local = open.remove(handle);
        Connection connection = current;
        if (local == null || connection == null) {
            return;
        }
        synchronized (local) {
            if (local.connection != connection) {
                return;
            }
        }
        try {
            connection.wire.sendLater(ids.getAndIncrement(), new Message.Release(local.id));
        } catch (IOException e) {
            lost(connection, e);
        }
    }

    @Override
    public void close() {
        Connection connection;
        synchronized (this) {
            closed = true;
            connection = current;
            current = null;
        }
        if (redialer != null) {
            redialer.interrupt();
        }
        deadlines.close();
        returns.shutdownNow();
        if (connection != null) {
            connection.channel.close();
            connection.pending.values().forEach(f -> f.completeExceptionally(new LinkException(Errno.EIO, "unmounting")));
            connection.view.close();
        }
        PostedRegion r = region;
        if (r != null) {
            r.close();
        }
    }
}
