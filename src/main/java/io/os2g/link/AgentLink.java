package io.os2g.link;

import io.os2g.CachedFile;
import io.os2g.staging.ReservedPages;
import io.os2g.staging.StagingView;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiConsumer;

/** What the shim can ask of the agent, in the same process or another. */
public interface AgentLink extends AutoCloseable {

    /** Opens a file version; returns the handle for it. */
    long open(OpenRequest request);

    /**
     * Asks for a range to be staged. The future completes when it is, or fails with an
     * {@link io.os2g.ErrnoException}.
     */
    CompletableFuture<Void> stage(ReadRequest request);

    /**
     * Whether the agent replies to READs on the mount's /dev/fuse itself (split mode, once the shim lent
     * it the descriptor: {@link DeviceLender}): then {@link #replyInAgent} instead of {@link #stage} and
     * a copy.
     */
    default boolean agentReplies() {
        return false;
    }

    /**
     * Asks the agent to stage a range and reply to READ {@code unique} with it; {@code done} is called
     * once, with what the agent sent or the failure (an {@link io.os2g.ErrnoException}; the READ is then
     * the caller's to answer). {@code done} is in place before the request goes out, and an outcome is
     * handed to it before any later message from the agent is taken: a stats request made after the READ
     * returned finds it counted.
     */
    default void replyInAgent(ReadRequest request, long unique, BiConsumer<RepliedRead, Throwable> done) {
        done.accept(null, new LinkException(io.os2g.Errno.EIO, "this agent replies to no READs"));
    }

    /**
     * The local file that would hold exactly the bytes of the file version {@code request} names, for
     * the kernel to read itself (FUSE passthrough) once verified: where the agent's disk cache keeps the
     * whole object. Null when it has no cache or the file is larger than a block, and always from an
     * agent in another process (its disk is not this one's to read: the shim never touches the cache).
     */
    default CachedFile cachedFile(OpenRequest request) {
        return null;
    }

    /** Tells the agent a range is being read (it was staged already), so its readahead moves on; no answer. */
    void hint(ReadRequest request);

    /** Asks for files to be staged in the order given (hints and warm); no answer. */
    void prefetch(PrefetchRequest request);

    /** Forgets a handle (its staged chunks stay until evicted). */
    void release(long handle);

    /**
     * Starts a file written through the mount, to be published as {@code key}; returns the upload's
     * handle. Nothing reaches the store before the first part is full or the file is finished.
     */
    default long beginWrite(String key) {
        throw new LinkException(io.os2g.Errno.EROFS, "this agent takes no writes");
    }

    /** Staging pages for part {@code number} of upload {@code upload}; waits while the store is behind (back-pressure). */
    default ReservedPages nextPart(long upload, int number) {
        throw new LinkException(io.os2g.Errno.EROFS, "this agent takes no writes");
    }

    /** Part {@code number} is full ({@code length} bytes in its pages): the agent uploads it. No answer. */
    default void partWritten(long upload, int number, int length) {
        throw new LinkException(io.os2g.Errno.EROFS, "this agent takes no writes");
    }

    /** Waits until every part written so far is uploaded (fsync); EIO when one failed. */
    default void flushWrite(long upload) {
        throw new LinkException(io.os2g.Errno.EROFS, "this agent takes no writes");
    }

    /** Uploads the last part ({@code lastPart} 0: none) and publishes the object; EIO (nothing published) on failure. */
    default PublishedObject finishWrite(long upload, int lastPart, int lastLength) {
        throw new LinkException(io.os2g.Errno.EROFS, "this agent takes no writes");
    }

    /** Drops a file being written: nothing is published, its parts are aborted. No answer. */
    default void abortWrite(long upload) {
    }

    /** Deletes {@code key} from the bucket. */
    default void deleteObject(String key) {
        throw new LinkException(io.os2g.Errno.EROFS, "this agent takes no writes");
    }

    /** Renames object {@code from} to {@code to} in the bucket (a copy there, then a delete); returns the new object. */
    default PublishedObject moveObject(String from, String to, long size) {
        throw new LinkException(io.os2g.Errno.EROFS, "this agent takes no writes");
    }

    /**
     * The agent's staging region as mapped here, for reads with no message.
     *
     * @throws LinkException EIO while the agent is not connected
     */
    StagingView staging();

    @Override
    void close();
}
