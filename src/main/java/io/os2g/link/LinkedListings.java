package io.os2g.link;

import io.os2g.store.Listing;
import io.os2g.store.ObjectStore;

/**
 * The shim's view of the store in split mode: listings, asked of the agent (which holds the
 * credentials and the connections). Object bytes never come this way: they arrive in staging.
 */
public final class LinkedListings implements ObjectStore {

    private final SocketLink link;
    private final String bucket;

    public LinkedListings(SocketLink link, String bucket) {
        this.link = link;
        this.bucket = bucket;
    }

    @Override
    public Listing list(String prefix) {
        return link.list(prefix);
    }

    @Override
    public void read(String key, long offset, long length, String etag, BodyReader reader) {
        throw new UnsupportedOperationException("the shim reads object bytes from staging, never from the store");
    }

    @Override
    public void probe(String prefix) {
        link.list(prefix);
    }

    @Override
    public String bucket() {
        return bucket;
    }

    @Override
    public void close() {
        // the link is closed by its owner
    }
}
