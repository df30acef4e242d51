package io.os2g.host;

import io.os2g.namespace.Node;
import io.os2g.staging.ReservedPages;

/**
 * A file being written through the mount: where it goes, the bytes written so far, the part being
 * filled in staging, and the agent's upload. Guarded by its own lock: the kernel may send a WRITE and
 * a FLUSH of one open file from two threads at once.
 */
final class WriteHandle {

    final Node.Dir parent;
    final String name;
    final Node.File file;
    final long upload;
    final CallerProcess opener;
    final long openedMillis;
    /** Bytes written, all in order from 0. */
    long size;
    /** {@link #size} at the last successful fsync (-1: none): the writer's explicit commit. */
    long synced = -1;
    /** The part being filled; null before the first write and after fsync sent a full one. */
    ReservedPages part;
    int filled;
    /** Parts handed to the agent for upload. */
    int partsSent;
    /** Published, aborted or failed: no more writes. */
    boolean ended;
    /** Why the file can no longer be written (the errno every later call answers), or 0. */
    int failed;

    WriteHandle(Node.Dir parent, String name, Node.File file, long upload, CallerProcess opener) {
        this.parent = parent;
        this.name = name;
        this.file = file;
        this.upload = upload;
        this.opener = opener;
        this.openedMillis = System.currentTimeMillis();
    }
}
