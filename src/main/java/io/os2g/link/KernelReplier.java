package io.os2g.link;

import java.util.concurrent.Executor;

/**
 * An agent session's way to reply to the kernel's READs itself, on the /dev/fuse descriptor the shim
 * lent it: possible only where the agent shares the host's kernel. The link carries the messages
 * ({@code Lend}, a READ to reply to, what was replied); whoever implements this owns the descriptor.
 */
public interface KernelReplier extends AutoCloseable {

    /** What became of one READ left to the agent. */
    interface Outcome {
        /** The reader has its bytes. */
        void replied(RepliedRead read);

        /** Nothing was sent: the shim answers the READ with {@code errno}. */
        void failed(int errno, String message);
    }

    /** Takes the descriptor the shim sent ahead of its {@code Lend}; false when none arrived. */
    boolean takeLentDevice();

    /**
     * Stages the range and replies to READ {@code unique} with it, then tells {@code outcome}. A range
     * staged already is replied to on the calling thread; one that waits for a fetch on the thread that
     * completes it, and {@code slow} takes the rare rest (a chunk evicted before it could be pinned).
     */
    void reply(ReadRequest request, long unique, Outcome outcome, Executor slow);

    /**
     * Returns once every READ replied to so far has had its outcome told: a stats request made after
     * a READ returned then finds it counted.
     */
    void awaitOutcomesTold();

    /** Closes the lent descriptor (the mount goes on with its session's own). */
    @Override
    void close();
}
