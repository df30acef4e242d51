package io.os2g.link;

import io.os2g.store.Listing;

/** The messages of the split-mode protocol; each travels in one frame with a request id. */
sealed interface Message {

    record Hello(int version, MountSpec spec) implements Message {
    }

    record Welcome(StagingRegionSpec layout) implements Message {
    }

    /** The agent will not serve this mount (version mismatch, bucket missing, credentials rejected ...). */
    record Refused(String reason) implements Message {
    }

    record ListPrefix(String prefix) implements Message {
    }

    record Listed(Listing listing) implements Message {
    }

    /** Open a file version under a handle number the shim chose: no answer, so an open costs no round trip. */
    record Open(long handle, OpenRequest request) implements Message {
    }

    /** Stage a range; {@code reply} false for a readahead hint nobody waits for. */
    record Read(ReadRequest request, boolean reply) implements Message {
    }

    record Done() implements Message {
    }

    /**
     * The shim has lent its /dev/fuse descriptor to the session ({@link DeviceLender}); Done when the
     * agent took it ({@link KernelReplier#takeLentDevice}).
     */
    record Lend() implements Message {
    }

    /** Stage a range and reply to READ {@code unique} with it on the lent /dev/fuse. */
    record ReplyToRead(ReadRequest request, long unique) implements Message {
    }

    /** A READ the agent replied to: its bytes, and how many of its chunks were staged already or waited. */
    record ReadReplied(long bytes, int hits, int misses) implements Message {
    }

    record Failed(int errno, String message) implements Message {
    }

    /** Stage files in this order (hints, warm); no answer. */
    record Prefetch(PrefetchRequest request) implements Message {
    }

    record Release(long handle) implements Message {
    }

    record Stats() implements Message {
    }

    record StatsReply(String json) implements Message {
    }
}
