package io.os2g.link;

import io.os2g.Errno;
import io.os2g.ErrnoException;
import io.os2g.agent.Agent;
import io.os2g.fuse.DeviceHandoff;
import io.os2g.fuse.FuseReplies;
import io.os2g.fuse.ReadReply;
import io.os2g.namespace.Node;
import io.os2g.staging.ChunkKey;
import io.os2g.staging.ChunkLayout;
import io.os2g.staging.StagedChunk;
import io.os2g.staging.StagingView;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.StampedLock;

/**
 * The agent answering a shim's READs itself, on the /dev/fuse descriptor the shim lent it: the staged
 * pages go from the segment files to the kernel by splice, and the kernel's copy of them into the
 * reader's page cache is the agent's work, not the shim's (the DPU-side shape: the shim only forwards
 * each READ's number). One per session; {@code agent} stays free of FUSE.
 */
final class ReadAnswerer implements AutoCloseable {

    /** The handoff socket's name in the session's staging directory (0700: only the shim and the agent enter it). */
    static final String HANDOFF = "fuse-device.sock";
    /** A chunk evicted between staging and pinning is staged again this many times, then EIO. */
    private static final int MAX_RESTAGE = 3;
    /** The agent's own bound on a fetch it answers (the shim gives up sooner, at its read deadline). */
    private static final long DEADLINE_NANOS = TimeUnit.MINUTES.toNanos(2);

    private final Agent agent;
    private final StagingView view;
    private final DeviceHandoff handoff;
    private volatile FuseReplies replies;
    /** Held shared from a READ's reply to the kernel until the shim's message about it is handed on. */
    private final StampedLock answering = new StampedLock();

    private ReadAnswerer(Agent agent, StagingView view, DeviceHandoff handoff) {
        this.agent = agent;
        this.view = view;
        this.handoff = handoff;
    }

    /** Binds the session's handoff socket in {@code stagingDirectory}. */
    static ReadAnswerer listen(Agent agent, StagingView view, Path stagingDirectory) throws IOException {
        return new ReadAnswerer(agent, view, DeviceHandoff.listen(stagingDirectory.resolve(HANDOFF)));
    }

    /** Takes the descriptor the shim sent before its {@link Message.Lend}; false when none is there. */
    boolean take() {
        if (replies != null) {
            return true;
        }
        int device = handoff.take();
        if (device < 0) {
            return false;
        }
        replies = new FuseReplies(device);
        return true;
    }

    /**
     * Stages the range and answers READ {@code unique} with it; hands {@code done} the message for the
     * shim: what was answered, or the failure (the shim answers that READ with the errno then). A range
     * staged already is answered on the calling thread, at once; one that waits for a fetch is answered
     * on the thread that completes the fetch, and {@code slow} takes the rare rest (a chunk evicted
     * before it could be pinned is staged again, blocking).
     */
    void answer(ReadRequest request, long unique, Consumer<Message> done, Executor slow) {
        FuseReplies out = replies;
        Node.File file = agent.file(request.handle());
        if (out == null || file == null) {
            done.accept(new Message.Failed(out == null ? Errno.EIO : Errno.EBADF,
                    out == null ? "no /dev/fuse lent to the agent" : "unknown handle " + request.handle()));
            return;
        }
        long offset = request.offset();
        int length = (int) Math.max(0, Math.min(file.size(), offset + request.length()) - offset);
        Range range = new Range(request.handle(), file, offset, length, unique);
        CompletableFuture<Void> staged = agent.read(request.handle(), offset, length);
        if (staged.isDone()) {
            answerStaged(range, staged, true, slow, done);
        } else {
            // a copy: the fetch's own future may be shared with other readers, whom this timeout must not fail
            CompletableFuture<Void> bounded = staged.copy().orTimeout(DEADLINE_NANOS, TimeUnit.NANOSECONDS);
            bounded.whenComplete((ok, failure) -> answerStaged(range, bounded, false, slow, done));
        }
    }

    /**
     * Returns once every READ answered so far has had its message handed to {@code done}: the shim's
     * stats, asked for after a READ returned, then count it (its reply goes out behind those messages).
     */
    void awaitAnswersTold() {
        answering.unlockWrite(answering.writeLock());
    }

    /** One READ's range of one open file version. */
    private record Range(long handle, Node.File file, long offset, int length, long unique) {
    }

    /** Answers once {@code staged} completed; a range whose chunk went before it could be pinned goes to {@code slow}. */
    private void answerStaged(Range range, CompletableFuture<Void> staged, boolean hit, Executor slow, Consumer<Message> done) {
        List<StagedChunk> pinned;
        try {
            staged.join();
            pinned = pin(range.file(), range.offset(), range.length());
        } catch (CompletionException e) {
            done.accept(failed(e.getCause()));
            return;
        } catch (RuntimeException e) {
            done.accept(failed(e));
            return;
        }
        if (pinned == null) {
            slow.execute(() -> restage(range, done));
        } else {
            reply(range, pinned, hit, done);
        }
    }

    /** Stages and pins again, waiting, for a range whose chunk was evicted before it could be pinned. */
    private void restage(Range range, Consumer<Message> done) {
        try {
            for (int attempt = 1; attempt < MAX_RESTAGE; attempt++) {
                agent.read(range.handle(), range.offset(), range.length()).get(DEADLINE_NANOS, TimeUnit.NANOSECONDS);
                List<StagedChunk> pinned = pin(range.file(), range.offset(), range.length());
                if (pinned != null) {
                    reply(range, pinned, false, done);
                    return;
                }
            }
            done.accept(new Message.Failed(Errno.EIO, "chunk of " + range.file().key() + " evicted before it could be read "
                    + MAX_RESTAGE + " times (staging region too small for the readers?)"));
        } catch (ExecutionException e) {
            done.accept(failed(e.getCause()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            done.accept(new Message.Failed(Errno.EIO, "interrupted"));
        } catch (TimeoutException | RuntimeException e) {
            done.accept(failed(e));
        }
    }

    /**
     * Sends the reply from the pinned chunks, lets them go, and tells the shim; the reader has its bytes
     * before the shim hears of them, so {@link #awaitAnswersTold} waits for this whole step.
     */
    private void reply(Range range, List<StagedChunk> pinned, boolean hit, Consumer<Message> done) {
        long stamp = answering.readLock();
        try {
            Message told;
            try {
                replies.read(range.unique(), reply -> write(reply, pinned, range.offset(), range.length()));
                int chunks = pinned.size();
                told = new Message.Answered(range.length(), hit ? chunks : 0, hit ? 0 : chunks);
            } catch (RuntimeException e) {
                told = failed(e);
            } finally {
                pinned.forEach(view::release);
            }
            done.accept(told);
        } finally {
            answering.unlockRead(stamp);
        }
    }

    private static Message.Failed failed(Throwable cause) {
        if (cause instanceof TimeoutException) {
            return new Message.Failed(Errno.EIO, "staging took longer than " + TimeUnit.NANOSECONDS.toSeconds(DEADLINE_NANOS) + " s");
        }
        return new Message.Failed(cause instanceof ErrnoException errno ? errno.errno() : Errno.EIO, String.valueOf(cause.getMessage()));
    }

    /** Pins every chunk of the range; null (and nothing pinned) when one is not staged. */
    private List<StagedChunk> pin(Node.File file, long offset, int length) {
        ChunkLayout layout = agent.layout();
        List<StagedChunk> pinned = new ArrayList<>(2);
        for (long position = offset; position < offset + length; position = layout.start(layout.index(position) + 1)) {
            StagedChunk chunk = view.acquire(new ChunkKey(file.inode(), layout.index(position)), file.etag());
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
        FuseReplies out = replies;
        if (out != null) {
            out.close();
        }
    }
}
