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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

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
     * Stages the range and answers READ {@code unique} with it; the message for the shim: what was
     * answered, or the failure (the shim answers that READ with the errno then). Blocks: run it on a
     * thread of its own.
     */
    Message answer(ReadRequest request, long unique) {
        FuseReplies out = replies;
        Node.File file = agent.file(request.handle());
        if (out == null || file == null) {
            return new Message.Failed(out == null ? Errno.EIO : Errno.EBADF,
                    out == null ? "no /dev/fuse lent to the agent" : "unknown handle " + request.handle());
        }
        long offset = request.offset();
        int length = (int) Math.max(0, Math.min(file.size(), offset + request.length()) - offset);
        ChunkLayout layout = agent.layout();
        int chunks = length == 0 ? 0 : (int) (layout.index(offset + length - 1) - layout.index(offset) + 1);
        boolean hit = true;
        try {
            for (int attempt = 0; attempt < MAX_RESTAGE; attempt++) {
                CompletableFuture<Void> staged = agent.read(request.handle(), offset, length);
                hit &= staged.isDone();
                staged.get(DEADLINE_NANOS, TimeUnit.NANOSECONDS);
                List<StagedChunk> pinned = pin(file, offset, length);
                if (pinned == null) {
                    continue; // evicted before it could be pinned: stage it again
                }
                try {
                    out.read(unique, reply -> write(reply, pinned, offset, length));
                } finally {
                    pinned.forEach(view::release);
                }
                return new Message.Answered(length, hit ? chunks : 0, hit ? 0 : chunks);
            }
            return new Message.Failed(Errno.EIO, "chunk of " + file.key() + " evicted before it could be read "
                    + MAX_RESTAGE + " times (staging region too small for the readers?)");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            return new Message.Failed(cause instanceof ErrnoException errno ? errno.errno() : Errno.EIO, String.valueOf(cause.getMessage()));
        } catch (TimeoutException e) {
            return new Message.Failed(Errno.EIO, "staging " + file.key() + " took longer than "
                    + TimeUnit.NANOSECONDS.toSeconds(DEADLINE_NANOS) + " s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Message.Failed(Errno.EIO, "interrupted");
        } catch (RuntimeException e) {
            return new Message.Failed(e instanceof ErrnoException errno ? errno.errno() : Errno.EIO, e.toString());
        }
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
