package io.os2g.link;

import io.os2g.namespace.Node;

/** Open one object version for reading. */
public record OpenRequest(long inode, String key, String etag, long size) {

    public static OpenRequest of(Node.File file) {
        return new OpenRequest(file.inode(), file.key(), file.etag(), file.size());
    }

    /** The file version as the agent's namespace model has it (its mtime does not travel). */
    public Node.File file() {
        return new Node.File(inode, key, size, etag, 0);
    }
}
