package io.os2g.link;

import io.os2g.Errno;
import io.os2g.staging.ReservedPages;
import io.os2g.staging.StagingConfig;
import io.os2g.staging.StagingView;
import io.os2g.store.Listing;
import java.io.IOException;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;
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
 * The shim's end of the split mode: requests to an agent process over its Unix socket, and the
 * agent's staging region mapped here, so that a staged chunk is read with no message at all.
 *
 * <p>When the agent goes away, requests in flight fail with EIO at once and new ones fail fast
 * while a background thread dials again every second; once the agent is back, the link opens a
 * new session (a fresh staging region), maps it, and reopens handles lazily on their next read.
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

    private final Path socket;
    private final MountSpec spec;
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
        final SocketChannel channel;
        final Wire wire;
        final StagingView view;
        final Path directory;
        final ConcurrentHashMap<Long, CompletableFuture<Message>> pending = new ConcurrentHashMap<>();
        /** Whether the agent holds the lent /dev/fuse and replies to READs. */
        volatile boolean agentReplies;

        Connection(SocketChannel channel, Wire wire, StagingView view, Path directory) {
            this.channel = channel;
            this.wire = wire;
            this.view = view;
            this.directory = directory;
        }

        void readReplies() {
            try {
                for (;;) {
                    Wire.Frame frame = wire.receive();
                    CompletableFuture<Message> waiting = pending.remove(frame.id());
                    if (waiting != null) {
                        waiting.complete(frame.message());
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

    private SocketLink(Path socket, MountSpec spec, Duration deadline) {
        this.socket = socket;
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
        SocketLink link = new SocketLink(socket, spec, deadline);
        try {
            link.current = link.dial();
        } catch (RuntimeException e) {
            link.deadlines.close();
            throw e;
        }
        return link;
    }

    private Connection dial() {
        SocketChannel channel;
        try {
            channel = SocketChannel.open(UnixDomainSocketAddress.of(socket));
        } catch (IOException e) {
            throw new LinkException(Errno.EIO, "no agent at unix:" + socket + " (" + e.getMessage() + "); start one with os2g agent --listen unix:" + socket);
        }
        try {
            Wire wire = new Wire(SocketChannelStreams.in(channel), SocketChannelStreams.out(channel));
            wire.send(0, new Message.Hello(Wire.VERSION, spec));
            Message answer = wire.receive().message();
            if (answer instanceof Message.Refused refused) {
                throw new LinkException(Errno.EIO, "the agent at unix:" + socket + " refused the mount: " + refused.reason());
            }
            if (!(answer instanceof Message.Welcome welcome)) {
                throw new LinkException(Errno.EIO, "the agent at unix:" + socket + " answered the hello with " + answer);
            }
            StagingRegionSpec l = welcome.layout();
            StagingView view = StagingView.attach(new StagingConfig(Path.of(l.directory()), l.capacity(), l.pageSize(),
                    l.segmentSize(), deadline), spec.writes());
            Connection connection = new Connection(channel, wire, view, Path.of(l.directory()));
            // a platform thread blocks in read(2) itself: on a virtual one every wait for an answer is a
            // trip through the JDK's poller, which cost the shim more CPU than the answers themselves
            Thread.ofPlatform().daemon().name("os2g-link-replies").start(connection::readReplies);
            lendTo(connection);
            return connection;
        } catch (IOException | RuntimeException e) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // failing anyway
            }
            if (e instanceof LinkException le) {
                throw le;
            }
            throw new LinkException(Errno.EIO, "handshake with the agent at unix:" + socket + " failed: " + e.getMessage());
        }
    }

    private void lost(Connection connection, IOException why) {
        synchronized (this) {
            if (current != connection) {
                return;
            }
            current = null;
        }
        try {
            connection.channel.close();
        } catch (IOException ignored) {
            // already broken
        }
        LinkException failure = new LinkException(Errno.EIO, "agent connection lost");
        connection.pending.values().forEach(f -> f.completeExceptionally(failure));
        // readers copying from it at this moment fail their access and report EIO; nothing is torn
        connection.view.close();
        if (closed) {
            return;
        }
        LOG.warn("lost the agent at unix:{} ({}); reads fail with EIO until it is back", socket, why.toString());
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
                    LOG.info("reconnected to the agent at unix:{}", socket);
                } catch (LinkException | IOException e) {
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
            throw new LinkException(Errno.EIO, "the agent at unix:" + socket + " is not connected");
        }
        return c;
    }

    @Override
    public StagingView staging() {
        return connection().view;
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
            case Message.PartPages pages -> pages.pages();
            case Message.Failed failed -> throw new LinkException(failed.errno(), failed.message());
            case Message other -> throw new LinkException(Errno.EIO, "unexpected answer to a write: " + other);
        };
    }

    @Override
    public void partWritten(long upload, int number, int length) {
        send(new Message.PartWritten(upload, number, length));
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
        return published(connection().call(new Message.FinishWrite(upload, lastPart, lastLength), WRITE_DEADLINE));
    }

    @Override
    public void abortWrite(long upload) {
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
            LOG.debug("the agent at unix:{} replies to this mount's READs", socket);
        } catch (IOException | RuntimeException e) { // never a failed mount: the shim can reply itself
            LOG.info("the agent at unix:{} does not reply to READs itself ({}); the shim replies", socket, e.getMessage());
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
        if (connection != null) {
            try {
                connection.channel.close();
            } catch (IOException ignored) {
                // closing
            }
            connection.pending.values().forEach(f -> f.completeExceptionally(new LinkException(Errno.EIO, "unmounting")));
            connection.view.close();
        }
    }
}
