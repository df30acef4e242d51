package io.os2g.link;

import io.os2g.CachedFile;
import io.os2g.Errno;
import io.os2g.agent.Agent;
import io.os2g.agent.Uploads;
import io.os2g.staging.ReservedPages;
import io.os2g.staging.StagingView;
import java.util.concurrent.CompletableFuture;

/** The link when shim and agent share a process (the default {@code os2g mount}): direct calls. */
public final class InProcessLink implements AgentLink {

    private final Agent agent;
    private final Uploads uploads;
    private final StagingView staging;

    /** @param uploads where written files go; null for a read-only mount */
    public InProcessLink(Agent agent, Uploads uploads, StagingView staging) {
        this.agent = agent;
        this.uploads = uploads;
        this.staging = staging;
    }

    private Uploads uploads() {
        if (uploads == null) {
            throw new LinkException(Errno.EROFS, "this mount takes no writes");
        }
        return uploads;
    }

    @Override
    public long beginWrite(String key) {
        return uploads().begin(key);
    }

    @Override
    public ReservedPages nextPart(long upload, int number) {
        return uploads().nextPart(upload, number);
    }

    @Override
    public void partWritten(long upload, int number, int length) {
        uploads().partWritten(upload, number, length);
    }

    @Override
    public void flushWrite(long upload) {
        uploads().flush(upload);
    }

    @Override
    public PublishedObject finishWrite(long upload, int lastPart, int lastLength) {
        return PublishedObject.of(uploads().finish(upload, lastPart, lastLength));
    }

    @Override
    public void abortWrite(long upload) {
        if (uploads != null) {
            uploads.abort(upload);
        }
    }

    @Override
    public void deleteObject(String key) {
        uploads().delete(key);
    }

    @Override
    public PublishedObject moveObject(String from, String to, long size) {
        return PublishedObject.of(uploads().move(from, to, size));
    }

    @Override
    public long open(OpenRequest request) {
        return agent.open(request.inode(), request.key(), request.etag(), request.size());
    }

    @Override
    public CachedFile cachedFile(OpenRequest request) {
        return agent.cachedFile(request.key(), request.etag(), request.size());
    }

    @Override
    public CompletableFuture<Void> stage(ReadRequest request) {
        return agent.stage(request.handle(), request.offset(), request.length());
    }

    @Override
    public void hint(ReadRequest request) {
        agent.stage(request.handle(), request.offset(), request.length());
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

    /** The agent and its uploads are closed by whoever built them, after the mount is gone. */
    @Override
    public void close() {
    }
}
