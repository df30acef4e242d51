package io.os2g.s3server;

import java.time.Duration;
import org.jclouds.blobstore.BlobStore;
import org.jclouds.blobstore.domain.Blob;
import org.jclouds.blobstore.domain.BlobMetadata;
import org.jclouds.blobstore.domain.PageSet;
import org.jclouds.blobstore.domain.StorageMetadata;
import org.jclouds.blobstore.options.GetOptions;
import org.jclouds.blobstore.options.ListContainerOptions;
import org.jclouds.blobstore.util.ForwardingBlobStore;

/**
 * A blob store that answers each GET, LIST and HEAD after a fixed delay, to stand in for a remote
 * object store. S3Proxy's own latency middleware rebuilds every blob it returns and drops the
 * Content-Range of a ranged GET on the way: its 206 then looks like a whole object of the range's
 * length, and a client that trusts it (rclone) asks for an empty range next and fails with EIO. This
 * one returns the blob as the backend made it.
 */
final class DelayedBlobStore extends ForwardingBlobStore {

    private final Duration delay;

    DelayedBlobStore(BlobStore backend, Duration delay) {
        super(backend);
        this.delay = delay;
    }

    @Override
    public Blob getBlob(String container, String name) {
        pause();
        return super.getBlob(container, name);
    }

    @Override
    public Blob getBlob(String container, String name, GetOptions options) {
        pause();
        return super.getBlob(container, name, options);
    }

    @Override
    public BlobMetadata blobMetadata(String container, String name) {
        pause();
        return super.blobMetadata(container, name);
    }

    @Override
    public PageSet<? extends StorageMetadata> list() {
        pause();
        return super.list();
    }

    @Override
    public PageSet<? extends StorageMetadata> list(String container) {
        pause();
        return super.list(container);
    }

    @Override
    public PageSet<? extends StorageMetadata> list(String container, ListContainerOptions options) {
        pause();
        return super.list(container, options);
    }

    private void pause() {
        try {
            Thread.sleep(delay);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the server is stopping: answer now
        }
    }
}
