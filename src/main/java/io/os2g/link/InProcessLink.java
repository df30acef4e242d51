package io.os2g.link;

import io.os2g.agent.Agent;
import io.os2g.staging.StagingView;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;

/** The link when shim and agent share a process (the default {@code os2g mount}): direct calls. */
public final class InProcessLink implements AgentLink {

    private final Agent agent;
    private final StagingView staging;

    public InProcessLink(Agent agent, StagingView staging) {
        this.agent = agent;
        this.staging = staging;
    }

    @Override
    public long open(OpenRequest request) {
        return agent.open(request.inode(), request.key(), request.etag(), request.size());
    }

    @Override
    public Path cachedFile(OpenRequest request) {
        return agent.cachedFile(request.key(), request.etag(), request.size());
    }

    @Override
    public CompletableFuture<Void> read(ReadRequest request) {
        return agent.read(request.handle(), request.offset(), request.length());
    }

    @Override
    public void hint(ReadRequest request) {
        agent.read(request.handle(), request.offset(), request.length());
    }

    @Override
    public void prefetch(PrefetchRequest request) {
        agent.prefetch(request.files().stream().map(OpenRequest::file).toList(), request.replace(), request.warm());
    }

    @Override
    public void release(long handle) {
        agent.release(handle);
    }

    @Override
    public StagingView staging() {
        return staging;
    }

    @Override
    public void close() {
        agent.close();
    }
}
