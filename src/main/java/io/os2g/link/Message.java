package io.os2g.link;

import io.os2g.store.Listing;

/** The messages of the split-mode protocol; each travels in one frame with a request id. */
sealed interface Message {

    record Hello(int version, MountSpec spec) implements Message {
    }

    record Welcome(StagingLayout layout) implements Message {
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
     * The shim has sent its /dev/fuse descriptor to the session's handoff socket
     * ({@link ReadAnswerer#HANDOFF}); Done when the agent took it.
     */
    record Lend() implements Message {
    }

    /** Stage a range and answer READ {@code unique} with it on the lent /dev/fuse. */
    record Answer(ReadRequest request, long unique) implements Message {
    }

    /** A READ answered: its bytes, and how many of its chunks were staged already or waited. */
    record Answered(long bytes, int hits, int misses) implements Message {
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
