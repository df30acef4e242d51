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
 * The agent's end of the split mode: a Unix socket (mode 0600), or a TCP port behind mutual TLS
 * ({@link TlsHandshake}), where shims connect, one session per connection. Each connection is read by one platform thread that blocks on the socket (no polling:
 * an idle agent uses no CPU); slow requests (listings, fetches, READs the agent replies to) run on virtual
 * threads and answer by request id.
 */
public final class AgentServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(AgentServer.class);

    private final LinkAddress address;
    private final LinkTls tls;
    private final AgentSession.Factory sessions;
    private final ServerSocketChannel server;
    private final TlsHandshake.Tokens tokens = new TlsHandshake.Tokens();
    private final ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
    private final Set<LinkStream> connections = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    private AgentServer(LinkAddress address, LinkTls tls, AgentSession.Factory sessions, ServerSocketChannel server) {
        this.address = address;
        this.tls = tls;
        this.sessions = sessions;
        this.server = server;
    }

    /**
     * Listens at {@code address} and serves until closed: a Unix socket (mode 0600; a stale socket file
     * of a dead agent is replaced), or a TCP port where every peer must pass {@code tls}.
     *
     * @param tls mutual TLS for a TCP address; null only for a loopback one (checked by the caller's rules)
     */
    public static AgentServer listen(LinkAddress address, LinkTls tls, AgentSession.Factory sessions) throws IOException {
        ServerSocketChannel server;
        if (address instanceof LinkAddress.Unix unix) {
            server = bindUnix(unix.path());
        } else {
            server = ServerSocketChannel.open();
            server.bind(((LinkAddress.Tcp) address).socketAddress());
        }
        AgentServer agentServer = new AgentServer(address, tls, sessions, server);
        Thread.ofPlatform().name("os2g-agent-accept").daemon(true).start(agentServer::acceptLoop);
        return agentServer;
    }

    private static ServerSocketChannel bindUnix(Path path) throws IOException {
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
        return server;
    }

    /** The port a TCP listener is bound to (the one asked for, or the one picked for port 0); -1 for a Unix socket. */
    public int port() {
        try {
            return server.getLocalAddress() instanceof java.net.InetSocketAddress a ? a.getPort() : -1;
        } catch (IOException e) {
            return -1;
        }
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                SocketChannel channel = server.accept();
                // one platform thread per shim blocks in read(2) (no poller round trip per request)
                Thread.ofPlatform().daemon().name("os2g-agent-link").start(() -> admit(channel));
            } catch (IOException e) {
                if (!closed) {
                    LOG.warn("accept on {} failed: {}", address, e.toString());
                }
                return;
            }
        }
    }

    /** Lets a connection in: at once on a Unix socket, after mutual TLS on TCP (a refusal is one log line). */
    private void admit(SocketChannel channel) {
        LinkStream link;
        if (address instanceof LinkAddress.Unix) {
            link = LinkStream.of(channel, address.toString());
        } else if (tls == null) {
            try {
                TlsHandshake.tune(channel);
                link = LinkStream.of(channel, String.valueOf(channel.getRemoteAddress()));
            } catch (IOException e) {
                close(channel);
                return;
            }
        } else {
            try {
                link = TlsHandshake.accept(channel, tls, tokens);
            } catch (IOException e) {
                LOG.warn("refused a link from {}: {}", remote(channel), e.getMessage());
                close(channel);
                return;
            }
            if (link == null) {
                return; // it took a token for a plain connection
            }
        }
        serve(link);
    }

    private static String remote(SocketChannel channel) {
        try {
            return String.valueOf(channel.getRemoteAddress());
        } catch (IOException e) {
            return "a peer";
        }
    }

    private static void close(SocketChannel channel) {
        try {
            channel.close();
        } catch (IOException ignored) {
            // closing
        }
    }

    private void serve(LinkStream link) {
        connections.add(link);
        Wire wire = new Wire(link);
        AgentSession session = null;
        ChunkPoster poster = null;
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
            poster = hello.posted() ? new ChunkPoster(wire) : null;
            try {
                session = sessions.open(hello.spec(), poster == null ? null : new AgentSession.Posting(poster, hello.held()));
            } catch (RuntimeException e) {
                wire.send(first.id(), new Message.Refused(String.valueOf(e.getMessage())));
                return;
            }
            LOG.info("serving {}/{} to a shim at {} ({})", hello.spec().bucket(), hello.spec().prefix(), link.peer(),
                    poster == null ? "staging in " + session.layout().directory()
                            : "posting into its region" + (link.encrypted() ? ", encrypted" : ", unencrypted"));
            wire.send(first.id(), new Message.Welcome(session.layout()));
            if (poster != null) {
                poster.start(session.index());
            }
            for (;;) {
                Wire.Frame frame = wire.receive();
                dispatch(wire, session, poster, frame);
            }
        } catch (EOFException e) {
            // the shim went away (unmounted or killed)
        } catch (IOException e) {
            if (!closed) {
                LOG.warn("link to a shim at {} failed: {}", link.peer(), e.toString());
            }
        } finally {
            connections.remove(link);
            link.close();
            if (poster != null) {
                poster.close();
            }
            if (session != null) { // its kernel replier's lent /dev/fuse too: the mount must not outlive its shim here
                LOG.info("shim of {} disconnected: its staging region is freed", session.layout().directory());
                session.close();
            }
        }
    }

    private void dispatch(Wire wire, AgentSession session, ChunkPoster poster, Wire.Frame frame) throws IOException {
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
                    // posted: the answer after the chunk's post, so the shim finds it once told
                    staged.whenComplete((ok, failed) -> {
                        Message answer = failed == null ? new Message.Done() : failure(failed);
                        if (poster != null) {
                            poster.answer(id, answer);
                        } else {
                            reply(wire, id, answer);
                        }
                    });
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
            case Message.Returned returned -> {
                for (int slot : returned.slots()) {
                    session.index().returned(slot);
                }
            }
            case Message.PartBytes part -> {
                try {
                    uploads(session).receivePart(part.upload(), part.number(), part.length(), wire.bytes(part.length()));
                } catch (RuntimeException e) {
                    wire.skip(part.length()); // the part's next call fails
                    LOG.debug("bytes of part {} of upload {}: {}", part.number(), part.upload(), e.getMessage());
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
        connections.forEach(LinkStream::close);
        threads.shutdown();
        if (address instanceof LinkAddress.Unix unix) {
            try {
                Files.deleteIfExists(unix.path());
            } catch (IOException ignored) {
                // best effort
            }
        }
    }
}
