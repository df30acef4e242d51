package io.os2g.link;

import io.os2g.agent.Agent;
import java.util.concurrent.CompletableFuture;

/** The link when shim and agent share a process (the default {@code os2g mount}): direct calls. */
public final class InProcessLink implements AgentLink {

    private final Agent agent;

    public InProcessLink(Agent agent) {
        this.agent = agent;
    }

    @Override
    public long open(OpenRequest request) {
        return agent.open(request.inode(), request.key(), request.etag(), request.size());
    }

    @Override
    public CompletableFuture<Void> read(ReadRequest request) {
        return agent.read(request.handle(), request.offset(), request.length());
    }

    @Override
    public void release(long handle) {
        agent.release(handle);
    }

    @Override
    public void close() {
        agent.close();
    }
}
