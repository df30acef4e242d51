package io.os2g.agentreplies;

import io.os2g.Errno;
import io.os2g.ErrnoException;
import io.os2g.agent.Agent;
import io.os2g.fuse.DeviceHandoff;
import io.os2g.fuse.LentDeviceReplies;
import io.os2g.fuse.ReadReply;
import io.os2g.link.KernelReplier;
import io.os2g.link.ReadRequest;
import io.os2g.link.RepliedRead;
import io.os2g.namespace.Node;
import io.os2g.staging.ChunkKey;
import io.os2g.staging.ChunkLayout;
import io.os2g.staging.Restaging;
import io.os2g.staging.StagedChunk;
import io.os2g.staging.StagingView;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.StampedLock;

/**
 * The agent replying to a shim's READs itself, on the /dev/fuse descriptor the shim lent it: the staged
 * pages go from the segment files to the kernel by splice, and the kernel's copy of them into the
 * reader's page cache is the agent's work, not the shim's (the shim only forwards each READ's number).
 * One per agent session; {@code agent} and {@code link} stay free of FUSE.
 */
public final class AgentReplier implements KernelReplier {

    /** The handoff socket's name in the session's staging directory (0700: only the shim and the agent enter it). */
    public static final String HANDOFF = "fuse-device.sock";
    /** The agent's own bound on a fetch it answers (the shim gives up sooner, at its read deadline). */
    private static final long DEADLINE_NANOS = TimeUnit.MINUTES.toNanos(2);

    private final Agent agent;
    private final StagingView view;
    private final DeviceHandoff handoff;
    private volatile LentDeviceReplies replies;
    /** Held shared from a READ's reply to the kernel until its outcome is told. */
    private final StampedLock telling = new StampedLock();

    private AgentReplier(Agent agent, StagingView view, DeviceHandoff handoff) {
        this.agent = agent;
        this.view = view;
        this.handoff = handoff;
    }

    /** Binds the session's handoff socket in {@code stagingDirectory}. */
    public static AgentReplier listen(Agent agent, StagingView view, Path stagingDirectory) throws IOException {
        return new AgentReplier(agent, view, DeviceHandoff.listen(stagingDirectory.resolve(HANDOFF)));
    }

    @Override
    public boolean takeLentDevice() {
        if (replies != null) {
            return true;
        }
        int device = handoff.take();
        if (device < 0) {
            return false;
        }
        replies = new LentDeviceReplies(device);
        return true;
    }

    @Override
    public void reply(ReadRequest request, long unique, Outcome done, Executor slow) {
        LentDeviceReplies out = replies;
        Node.File file = agent.file(request.handle());
        if (out == null || file == null) {
            done.failed(out == null ? Errno.EIO : Errno.EBADF, out == null ? "no /dev/fuse lent to the agent" : "unknown handle " + request.handle());
            return;
        }
        long offset = request.offset();
        int length = (int) Math.max(0, Math.min(file.size(), offset + request.length()) - offset);
        Range range = new Range(request.handle(), file, offset, length, unique);
        CompletableFuture<Void> staged = agent.stage(request.handle(), offset, length);
        if (staged.isDone()) {
            replyStaged(range, staged, true, slow, done);
        } else {
            // a copy: the fetch's own future may be shared with other readers, whom this timeout must not fail
            CompletableFuture<Void> bounded = staged.copy().orTimeout(DEADLINE_NANOS, TimeUnit.NANOSECONDS);
            bounded.whenComplete((ok, failure) -> replyStaged(range, bounded, false, slow, done));
        }
    }

    @Override
    public void awaitOutcomesTold() {
        telling.unlockWrite(telling.writeLock());
    }

    /** One READ's range of one open file version. */
    private record Range(long handle, Node.File file, long offset, int length, long unique) {
    }

    /** Replies once {@code staged} completed; a range whose chunk went before it could be pinned goes to {@code slow}. */
    private void replyStaged(Range range, CompletableFuture<Void> staged, boolean hit, Executor slow, Outcome done) {
        List<StagedChunk> pinned;
        try {
            staged.join();
            pinned = pin(range.file(), range.offset(), range.length());
        } catch (CompletionException e) {
            fail(done, e.getCause());
            return;
        } catch (RuntimeException e) {
            fail(done, e);
            return;
        }
        if (pinned == null) {
            slow.execute(() -> restage(range, done));
        } else {
            send(range, pinned, hit, done);
        }
    }

    /** Stages and pins again, waiting, for a range whose chunk was evicted before it could be pinned. */
    private void restage(Range range, Outcome done) {
        try {
            List<StagedChunk> pinned = Restaging.stageAndPin(
                    timeout -> agent.stage(range.handle(), range.offset(), range.length()).get(timeout, TimeUnit.NANOSECONDS),
                    () -> pin(range.file(), range.offset(), range.length()), System.nanoTime() + DEADLINE_NANOS);
            if (pinned != null) {
                send(range, pinned, false, done);
                return;
            }
            done.failed(Errno.EIO, "chunk of " + range.file().key() + " evicted before it could be read, again and again for "
                    + TimeUnit.NANOSECONDS.toSeconds(DEADLINE_NANOS) + " s (staging region too small for the readers?)");
        } catch (ExecutionException e) {
            fail(done, e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            done.failed(Errno.EIO, "interrupted");
        } catch (Exception e) {
            fail(done, e); // past the deadline, or failed
        }
    }

    /**
     * Sends the reply from the pinned chunks, lets them go, and tells the outcome; the reader has its
     * bytes before the shim hears of them, so {@link #awaitOutcomesTold} waits for this whole step.
     */
    private void send(Range range, List<StagedChunk> pinned, boolean hit, Outcome done) {
        long stamp = telling.readLock();
        try {
            RuntimeException failure = null;
            try {
                replies.read(range.unique(), reply -> write(reply, pinned, range.offset(), range.length()));
            } catch (RuntimeException e) {
                failure = e;
            } finally {
                pinned.forEach(view::release);
            }
            if (failure == null) {
                int chunks = pinned.size();
                done.replied(new RepliedRead(range.length(), hit ? chunks : 0, hit ? 0 : chunks));
            } else {
                fail(done, failure);
            }
        } finally {
            telling.unlockRead(stamp);
        }
    }

    private static void fail(Outcome done, Throwable cause) {
        if (cause instanceof TimeoutException) {
            done.failed(Errno.EIO, "staging took longer than " + TimeUnit.NANOSECONDS.toSeconds(DEADLINE_NANOS) + " s");
        } else {
            done.failed(cause instanceof ErrnoException errno ? errno.errno() : Errno.EIO, String.valueOf(cause.getMessage()));
        }
    }

    /** Pins every chunk of the range; null (and nothing pinned) when one's bytes in the range are not readable yet. */
    private List<StagedChunk> pin(Node.File file, long offset, int length) {
        ChunkLayout layout = agent.layout();
        List<StagedChunk> pinned = new ArrayList<>(2);
        for (long position = offset; position < offset + length; position = layout.start(layout.index(position) + 1)) {
            long index = layout.index(position);
            long needed = Math.min(offset + length, layout.start(index + 1)) - layout.start(index);
            StagedChunk chunk = view.acquire(new ChunkKey(file.inode(), index), file.etag(), needed);
            if (chunk == null) {
                pinned.forEach(view::release);
                return null;
            }
            pinned.add(chunk);
        }
        return pinned;
    }

    /** The reply: the pinned chunks' bytes by splice, or copied where a reply pipe cannot take them. */
    private void write(ReadReply reply, List<StagedChunk> pinned, long offset, int length) {
        ChunkLayout layout = agent.layout();
        reply.begin(length);
        long position = offset;
        for (StagedChunk chunk : pinned) {
            long within = position - layout.start(layout.index(position));
            long count = Math.min(offset + length, layout.start(layout.index(position) + 1)) - position;
            if (!reply.splice(pipe -> view.spliceOut(chunk, within, pipe, count), count)) {
                copy(reply, pinned, offset, length);
                return;
            }
            position += count;
        }
    }

    private void copy(ReadReply reply, List<StagedChunk> pinned, long offset, int length) {
        ChunkLayout layout = agent.layout();
        reply.restart();
        reply.begin(length);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = arena.allocate(Math.max(1, length));
            long position = offset;
            for (StagedChunk chunk : pinned) {
                long within = position - layout.start(layout.index(position));
                long count = Math.min(offset + length, layout.start(layout.index(position) + 1)) - position;
                view.copyOut(chunk, within, buffer, position - offset, count);
                position += count;
            }
            reply.copy(buffer.asSlice(0, length));
        }
    }

    /** Closes the handoff socket and the lent descriptor (the mount goes on with its session's own). */
    @Override
    public void close() {
        handoff.close();
        LentDeviceReplies out = replies;
        if (out != null) {
            out.close();
        }
    }
}
