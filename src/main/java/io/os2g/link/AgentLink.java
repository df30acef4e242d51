package io.os2g.link;

import java.util.concurrent.CompletableFuture;

/** What the shim can ask of the agent. */
public interface AgentLink extends AutoCloseable {

    /** Opens a file version; returns the agent's handle for it. */
    long open(OpenRequest request);

    /**
     * Asks for a range to be staged. The future completes when it is, or fails with an
     * {@link io.os2g.ErrnoException}; callers that only hint do not wait for it.
     */
    CompletableFuture<Void> read(ReadRequest request);

    /** Forgets a handle (its staged chunks stay until evicted). */
    void release(long handle);

    @Override
    void close();
}
