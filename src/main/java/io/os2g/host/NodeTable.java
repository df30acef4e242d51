package io.os2g.host;

import io.os2g.Errno;
import io.os2g.ErrnoException;
import io.os2g.namespace.InodeTable;
import java.util.HashMap;
import java.util.Map;

/**
 * The paths of the nodes the kernel holds: a FUSE node id is the namespace's inode (stable for a key
 * for the life of the mount), remembered with the kernel's count of lookups until it forgets them all.
 */
final class NodeTable {

    private record Known(String path, long lookups) {
    }

    private final Map<Long, Known> nodes = new HashMap<>();

    NodeTable() {
        nodes.put(InodeTable.ROOT, new Known("/", 1));
    }

    /** One more lookup of {@code node} at {@code path}. */
    synchronized void remember(long node, String path) {
        Known known = nodes.get(node);
        nodes.put(node, new Known(path, known == null ? 1 : known.lookups() + 1));
    }

    /** {@code node} was renamed: it is at {@code path} now, with the lookups it had. */
    synchronized void moved(long node, String path) {
        Known known = nodes.get(node);
        if (known != null) {
            nodes.put(node, new Known(path, known.lookups()));
        }
    }

    synchronized void forget(long node, long count) {
        Known known = nodes.get(node);
        if (known != null && node != InodeTable.ROOT) {
            if (known.lookups() <= count) {
                nodes.remove(node);
            } else {
                nodes.put(node, new Known(known.path(), known.lookups() - count));
            }
        }
    }

    /** The path of a node the kernel holds; ESTALE for one it does not (forgotten). */
    synchronized String path(long node) {
        Known known = nodes.get(node);
        if (known == null) {
            throw new Stale(node);
        }
        return known.path();
    }

    static String child(String parent, String name) {
        return parent.equals("/") ? "/" + name : parent + "/" + name;
    }

    /** The directory holding {@code path} (not the root). */
    static String parent(String path) {
        int slash = path.lastIndexOf('/');
        return slash == 0 ? "/" : path.substring(0, slash);
    }

    /** The last name of {@code path} (not the root). */
    static String name(String path) {
        return path.substring(path.lastIndexOf('/') + 1);
    }

    private static final class Stale extends ErrnoException {
        Stale(long node) {
            super("node " + node + " is not known (forgotten)", null);
        }

        @Override
        public int errno() {
            return Errno.ESTALE;
        }
    }
}
