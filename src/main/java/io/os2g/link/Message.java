package io.os2g.link;

import io.os2g.staging.ReservedPages;
import io.os2g.store.Listing;
import io.os2g.store.ObjectSummary;

/** The messages of the split-mode protocol; each travels in one frame with a request id. */
sealed interface Message {

    /**
     * The first frame of a link. {@code posted}: the shim has a staging region of its own (the agent is
     * on another machine) and the agent posts chunks into it; {@code held} what that region already
     * holds from an earlier session, which the agent takes over.
     */
    record Hello(int version, MountSpec spec, boolean posted, java.util.List<io.os2g.staging.ExtentIndex.Held> held) implements Message {
    }

    /** A chunk staged whole, to be published in the shim's region in its slot; its {@code length} bytes follow the frame. */
    record Posted(io.os2g.staging.ExtentIndex.Held chunk) implements Message {
    }

    /** The agent evicted these slots' chunks: the shim frees them once no reader holds them, and says so with Returned. */
    record Recalled(int[] slots) implements Message {
        @Override
        public boolean equals(Object o) {
            return o instanceof Recalled r && java.util.Arrays.equals(r.slots, slots);
        }

        @Override
        public int hashCode() {
            return java.util.Arrays.hashCode(slots);
        }
    }

    /** Slots the shim freed after a recall: the agent may use them and their pages again. */
    record Returned(int[] slots) implements Message {
        @Override
        public boolean equals(Object o) {
            return o instanceof Returned r && java.util.Arrays.equals(r.slots, slots);
        }

        @Override
        public int hashCode() {
            return java.util.Arrays.hashCode(slots);
        }
    }

    /** The first {@code length} bytes of a written part, which follow the frame (a shim on another machine). */
    record PartBytes(long upload, int number, int length) implements Message {
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

    /** Start a file written through the mount, to be published as {@code key}; answered Began. */
    record BeginWrite(String key) implements Message {
    }

    record Began(long upload) implements Message {
    }

    /** Staging pages for part {@code number} of an upload; answered PartPages once there is room. */
    record NextPart(long upload, int number) implements Message {
    }

    record PartPages(ReservedPages pages) implements Message {
    }

    /** Part {@code number} holds {@code length} bytes: upload it. No answer (a failure shows at the next call). */
    record PartWritten(long upload, int number, int length) implements Message {
    }

    /** Wait for every part written so far (fsync); answered Done or Failed. */
    record FlushWrite(long upload) implements Message {
    }

    /** Upload the last part and publish; answered Published or Failed. */
    record FinishWrite(long upload, int lastPart, int lastLength) implements Message {
    }

    record Published(ObjectSummary object) implements Message {
    }

    /** Drop a file being written; no answer. */
    record AbortWrite(long upload) implements Message {
    }

    /** Delete a key; answered Done or Failed. */
    record DeleteObject(String key) implements Message {
    }

    /** Rename an object (copy, then delete); answered Published or Failed. */
    record MoveObject(String from, String to, long size) implements Message {
    }

    record StatsReply(String json) implements Message {
    }
}
