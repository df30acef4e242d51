package io.os2g.link;

import io.os2g.Errno;
import io.os2g.ErrnoException;
import io.os2g.agent.Agent;
import java.io.EOFException;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent's end of the split mode: a Unix socket (mode 0600) where shims connect, one session per
 * connection. Each connection is read by one platform thread that blocks on the socket (no polling:
 * an idle agent uses no CPU); slow requests (listings, fetches, READs the agent replies to) run on virtual
 * threads and answer by request id.
 */
public final class AgentServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(AgentServer.class);

    private final Path path;
    private final AgentSession.Factory sessions;
    private final ServerSocketChannel server;
    private final ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
    private final Set<SocketChannel> connections = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    private AgentServer(Path path, AgentSession.Factory sessions, ServerSocketChannel server) {
        this.path = path;
        this.sessions = sessions;
        this.server = server;
    }

    /** Listens at {@code path} (a stale socket file of a dead agent is replaced) and serves until closed. */
    public static AgentServer listen(Path path, AgentSession.Factory sessions) throws IOException {
        Files.createDirectories(path.toAbsolutePath().getParent());
        if (Files.exists(path)) {
            try (SocketChannel probe = SocketChannel.open(UnixDomainSocketAddress.of(path))) {
                throw new IOException("another agent is listening at " + path);
            } catch (IOException refused) {
                if (refused.getMessage() != null && refused.getMessage().startsWith("another agent")) {
                    throw refused;
                }
                Files.delete(path); // left by an agent that died
            }
        }
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(path));
        Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-------"));
        AgentServer agentServer = new AgentServer(path, sessions, server);
        Thread.ofPlatform().name("os2g-agent-accept").daemon(true).start(agentServer::acceptLoop);
        return agentServer;
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                SocketChannel channel = server.accept();
                connections.add(channel);
                // one platform thread per shim blocks in read(2) (no poller round trip per request)
                Thread.ofPlatform().daemon().name("os2g-agent-link").start(() -> serve(channel));
            } catch (IOException e) {
                if (!closed) {
                    LOG.warn("accept on {} failed: {}", path, e.toString());
                }
                return;
            }
        }
    }

    private void serve(SocketChannel channel) {
        Wire wire = new Wire(SocketChannelStreams.in(channel), SocketChannelStreams.out(channel));
        AgentSession session = null;
        try {
            Wire.Frame first = wire.receive();
            if (!(first.message() instanceof Message.Hello hello)) {
                wire.send(first.id(), new Message.Refused("expected a hello"));
                return;
            }
            if (hello.version() != Wire.VERSION) {
                wire.send(first.id(), new Message.Refused("the agent speaks link protocol version " + Wire.VERSION
                        + ", this mount version " + hello.version() + ": run the same os2g release on both sides"));
                return;
            }
            try {
                session = sessions.open(hello.spec());
            } catch (RuntimeException e) {
                wire.send(first.id(), new Message.Refused(String.valueOf(e.getMessage())));
                return;
            }
            LOG.info("serving {}/{} to a shim (staging in {})", hello.spec().bucket(), hello.spec().prefix(), session.layout().directory());
            wire.send(first.id(), new Message.Welcome(session.layout()));
            for (;;) {
                Wire.Frame frame = wire.receive();
                dispatch(wire, session, frame);
            }
        } catch (EOFException e) {
            // the shim went away (unmounted or killed)
        } catch (IOException e) {
            if (!closed) {
                LOG.warn("link to a shim failed: {}", e.toString());
            }
        } finally {
            connections.remove(channel);
            try {
                channel.close();
            } catch (IOException ignored) {
                // closing
            }
            if (session != null) { // its kernel replier's lent /dev/fuse too: the mount must not outlive its shim here
                LOG.info("shim of {} disconnected: its staging region is freed", session.layout().directory());
                session.close();
            }
        }
    }

    private void dispatch(Wire wire, AgentSession session, Wire.Frame frame) throws IOException {
        Agent agent = session.agent();
        KernelReplier replier = session.kernelReplier();
        long id = frame.id();
        switch (frame.message()) {
            case Message.ListPrefix list -> threads.execute(() -> {
                try {
                    reply(wire, id, new Message.Listed(agent.listing(list.prefix())));
                } catch (RuntimeException e) {
                    reply(wire, id, failure(e));
                }
            });
            case Message.Open open -> {
                OpenRequest r = open.request();
                agent.open(open.handle(), r.inode(), r.key(), r.etag(), r.size());
            }
            case Message.Read read -> {
                ReadRequest r = read.request();
                var staged = agent.stage(r.handle(), r.offset(), r.length());
                if (read.reply()) {
                    staged.whenComplete((ok, failed) -> reply(wire, id, failed == null ? new Message.Done() : failure(failed)));
                }
            }
            case Message.Lend lend -> reply(wire, id, replier != null && replier.takeLentDevice() ? new Message.Done()
                    : new Message.Failed(Errno.EIO, replier == null ? "this agent replies to no READs" : "no /dev/fuse descriptor arrived"));
            case Message.ReplyToRead read -> {
                if (replier == null) {
                    reply(wire, id, new Message.Failed(Errno.EIO, "this agent replies to no READs"));
                } else {
                    replier.reply(read.request(), read.unique(), outcome(wire, id), threads);
                }
            }
            case Message.Release release -> agent.release(release.handle());
            case Message.Prefetch prefetch -> {
                PrefetchRequest r = prefetch.request();
                agent.prefetch(r.files().stream().map(OpenRequest::file).toList(), r.replace(), r.warm());
            }
            case Message.Stats stats -> {
                if (replier != null) {
                    replier.awaitOutcomesTold(); // the shim counts a READ it left to us when it hears of it
                }
                reply(wire, id, new Message.StatsReply(session.statsJson()));
            }
            case Message.PartWritten part -> {
                try {
                    uploads(session).partWritten(part.upload(), part.number(), part.length());
                } catch (RuntimeException e) {
                    LOG.debug("part {} of upload {}: {}", part.number(), part.upload(), e.getMessage()); // the next call fails
                }
            }
            case Message.AbortWrite abort -> {
                if (session.uploads() != null) {
                    session.uploads().abort(abort.upload());
                }
            }
            // the rest may wait for the store: off the reader thread
            case Message.BeginWrite begin -> answer(wire, id, () -> new Message.Began(uploads(session).begin(begin.key())));
            case Message.NextPart next -> answer(wire, id, () -> new Message.PartPages(uploads(session).nextPart(next.upload(), next.number())));
            case Message.FlushWrite flush -> answer(wire, id, () -> {
                uploads(session).flush(flush.upload());
                return new Message.Done();
            });
            case Message.FinishWrite finish -> answer(wire, id, () ->
                    new Message.Published(uploads(session).finish(finish.upload(), finish.lastPart(), finish.lastLength())));
            case Message.DeleteObject delete -> answer(wire, id, () -> {
                uploads(session).delete(delete.key());
                return new Message.Done();
            });
            case Message.MoveObject move -> answer(wire, id, () ->
                    new Message.Published(uploads(session).move(move.from(), move.to(), move.size())));
            default -> reply(wire, id, new Message.Failed(Errno.EIO, "unexpected message " + frame.message()));
        }
    }

    private static io.os2g.agent.Uploads uploads(AgentSession session) {
        if (session.uploads() == null) {
            throw new LinkException(Errno.EROFS, "this mount takes no writes");
        }
        return session.uploads();
    }

    /** Computes an answer on a worker thread and sends it, or the failure's errno. */
    private void answer(Wire wire, long id, java.util.function.Supplier<Message> call) {
        threads.execute(() -> {
            Message answer;
            try {
                answer = call.get();
            } catch (RuntimeException e) {
                answer = failure(e);
            }
            reply(wire, id, answer);
        });
    }

    private static Message.Failed failure(Throwable t) {
        Throwable cause = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
        int errno = cause instanceof ErrnoException e ? e.errno() : Errno.EIO;
        return new Message.Failed(errno, String.valueOf(cause.getMessage()));
    }

    /**
     * Tells the shim how a READ it left to us went. Replied: the reader has its bytes and the shim
     * waits on this for its counters and deadline only, so it goes with the next frame or within
     * {@link Wire#LATER_MILLIS} (one wake-up of the shim's reader per batch, not per READ; a stats
     * request's reply goes after it). Failed: the READ is still open and the shim answers its errno,
     * so soon.
     */
    private static KernelReplier.Outcome outcome(Wire wire, long id) {
        return new KernelReplier.Outcome() {
            @Override
            public void replied(RepliedRead read) {
                try {
                    wire.sendLater(id, new Message.ReadReplied(read.bytes(), read.hits(), read.misses()));
                } catch (IOException e) {
                    // the shim is gone; its reader ends the session
                }
            }

            @Override
            public void failed(int errno, String message) {
                try {
                    wire.sendSoon(id, new Message.Failed(errno, message));
                } catch (IOException e) {
                    // the shim is gone; its reader ends the session
                }
            }
        };
    }

    private static void reply(Wire wire, long id, Message message) {
        try {
            wire.send(id, message);
        } catch (IOException e) {
            // the shim is gone; its reader ends the session
        }
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException ignored) {
            // closing
        }
        for (SocketChannel c : connections) {
            try {
                c.close();
            } catch (IOException ignored) {
                // closing
            }
        }
        threads.shutdown();
        try {
            Files.deleteIfExists(path);
        } catch (IOException ignored) {
            // best effort
        }
    }
}
