package io.os2g.host;

import io.os2g.namespace.Node;
import java.util.concurrent.atomic.AtomicLong;

/** One open file: the version pinned at open, the agent's handle, and the last chunk announced. */
final class OpenHandle {

    private final Node.File file;
    private final long agentHandle;
    private final AtomicLong announcedChunk = new AtomicLong(-1);

    OpenHandle(Node.File file, long agentHandle) {
        this.file = file;
        this.agentHandle = agentHandle;
    }

    Node.File file() {
        return file;
    }

    long agentHandle() {
        return agentHandle;
    }

    /** Marks {@code chunk} as the one being read; true when it differs from the last one marked. */
    boolean enter(long chunk) {
        return announcedChunk.getAndSet(chunk) != chunk;
    }
}
