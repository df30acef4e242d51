package io.os2g.fuse;

import io.os2g.fuse.FuseAbi.InitIn;
import io.os2g.fuse.FuseAbi.InitOut;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * What the kernel and os2g agreed in INIT: the protocol minor both speak and the features switched on.
 * Each feature is asked for only where the kernel offers it and the minor has it, as libfuse does;
 * without it the session falls back to what every supported kernel has (see docs/FUSE-PROTOCOL.md).
 *
 * @param kernelMinor the minor the kernel announced
 * @param minor the minor both speak (the lower of the kernel's and {@link #PROTOCOL_MINOR})
 * @param flags the INIT flags answered (FUSE_* bits 0-31)
 * @param flags2 the INIT flags answered, bits 32-63
 * @param largestRead the largest READ the kernel may send: max_pages pages, or its default of 32
 * @param pageSize the kernel's page size, in bytes
 */
public record Negotiation(int kernelMinor, int minor, int flags, int flags2, int largestRead, int pageSize) {

    /** The newest minor os2g speaks ({@code include/uapi/linux/fuse.h}, Linux 6.12). */
    public static final int PROTOCOL_MINOR = 41;
    /** The oldest: Linux 3.10, the kernel of RHEL/CentOS 7. Every struct os2g reads or writes has its shape since 7.9. */
    public static final int OLDEST_MINOR = 22;

    // INIT flags (fuse.h), with the minor that brought each
    static final int ASYNC_READ = 1;
    static final int ATOMIC_O_TRUNC = 1 << 3; // 7.9
    static final int BIG_WRITES = 1 << 5; // 7.9
    static final int AUTO_INVAL_DATA = 1 << 12; // 7.20
    static final int DO_READDIRPLUS = 1 << 13; // 7.21
    static final int READDIRPLUS_AUTO = 1 << 14; // 7.21
    static final int PARALLEL_DIROPS = 1 << 18; // 7.25
    static final int MAX_PAGES = 1 << 22; // 7.28
    static final int INIT_EXT = 1 << 30; // 7.36: flags2 follows
    /** flags2 bit 5 (FUSE_PASSTHROUGH, bit 37 of the 64): 7.40. */
    static final int PASSTHROUGH_HIGH = 1 << (37 - 32);

    /** The kernel's READ size without FUSE_MAX_PAGES: FUSE_DEFAULT_MAX_PAGES_PER_REQ pages. */
    static final int DEFAULT_MAX_PAGES = 32;
    static final int MAX_READAHEAD = 1 << 20;
    /** fuse_init_out before 7.23 (FUSE_COMPAT_22_INIT_OUT_SIZE), and since. */
    static final int COMPAT_22_INIT_OUT = InitOut.COMPAT_22_SIZE, INIT_OUT = InitOut.SIZE;

    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;

    /** Whether FUSE flag {@code flag} (bits 0-31) was switched on. */
    boolean has(int flag) {
        return (flags & flag) != 0;
    }

    /** Whether the kernel reads files that have a backing file itself (FUSE passthrough). */
    public boolean passthrough() {
        return (flags2 & PASSTHROUGH_HIGH) != 0;
    }

    /** One line for the log: the protocol and the features on. */
    public String describe() {
        List<String> on = new ArrayList<>();
        on.add("reads up to " + (largestRead >> 10) + " KiB" + (has(MAX_PAGES) ? "" : " (no max_pages)"));
        if (pageSize != 4096) {
            on.add((pageSize >> 10) + " KiB pages");
        }
        if (has(DO_READDIRPLUS)) {
            on.add("readdirplus");
        }
        if (has(PARALLEL_DIROPS)) {
            on.add("parallel dirops");
        }
        if (has(AUTO_INVAL_DATA)) {
            on.add("auto_inval_data");
        }
        if (passthrough()) {
            on.add("passthrough offered");
        }
        return "FUSE 7." + minor + (kernelMinor != minor ? " (kernel 7." + kernelMinor + ")" : "") + ": " + String.join(", ", on);
    }

    /** INIT from a kernel os2g cannot serve: the mount is to be removed. */
    public static final class Refused extends FuseException {
        Refused(String message) {
            super(FuseErrno.EPROTO, message);
        }
    }

    /** The INIT answer: its length in {@code out}, and the negotiation (null for a major to be asked again). */
    record Answer(int length, Negotiation negotiation) {
    }

    /**
     * Answers the kernel's fuse_init_in {@code in} into {@code out} (zeroed, at least 64 bytes).
     *
     * @param largestRequest the largest READ or WRITE a reply pipe and the request buffer hold
     * @param pageSize the kernel's page size
     * @throws Refused for a kernel older than {@link #OLDEST_MINOR} (or a major below 7)
     */
    static Answer answer(MemorySegment in, MemorySegment out, int largestRequest, int pageSize) {
        int major = in.get(INT, InitIn.MAJOR);
        int kernelMinor = in.get(INT, InitIn.MINOR);
        if (major > 7) {
            // a future kernel: say which major os2g speaks, and it asks again with a 7.x INIT
            out.set(INT, InitOut.MAJOR, 7);
            out.set(INT, InitOut.MINOR, PROTOCOL_MINOR);
            return new Answer(INIT_OUT, null);
        }
        if (major < 7 || kernelMinor < OLDEST_MINOR) {
            throw new Refused("the kernel speaks FUSE protocol " + major + "." + kernelMinor + "; os2g needs 7."
                    + OLDEST_MINOR + " or later (Linux 3.10, RHEL 7)");
        }
        int readahead = in.get(INT, InitIn.MAX_READAHEAD);
        int kernelFlags = in.get(INT, InitIn.FLAGS);
        int kernelFlags2 = kernelMinor >= 36 && (kernelFlags & INIT_EXT) != 0 ? in.get(INT, InitIn.FLAGS2) : 0;
        int minor = Math.min(kernelMinor, PROTOCOL_MINOR);

        // ATOMIC_O_TRUNC: O_TRUNC comes with the open (a hint file's "replace"); AUTO_INVAL_DATA: a new
        // mtime or size in fresh attributes drops the file's cached pages (a new object version)
        int wanted = ASYNC_READ | ATOMIC_O_TRUNC | BIG_WRITES
                | (minor >= 20 ? AUTO_INVAL_DATA : 0)
                | (minor >= 21 ? DO_READDIRPLUS | READDIRPLUS_AUTO : 0)
                | (minor >= 25 ? PARALLEL_DIROPS : 0)
                | (minor >= 28 ? MAX_PAGES : 0)
                | (minor >= 36 ? INIT_EXT : 0);
        int flags = kernelFlags & wanted;
        int flags2 = minor >= 40 && (flags & INIT_EXT) != 0 ? kernelFlags2 & PASSTHROUGH_HIGH : 0;
        int maxPages = Math.max(1, largestRequest / pageSize);
        // without max_pages the kernel sends up to 32 pages (2 MiB with 64 KiB pages): the mount's max_read
        // keeps them to a pipe's worth, and a larger one is answered from memory
        int largestRead = (flags & MAX_PAGES) != 0 ? maxPages * pageSize : DEFAULT_MAX_PAGES * pageSize;

        out.set(INT, InitOut.MAJOR, 7);
        out.set(INT, InitOut.MINOR, minor);
        out.set(INT, InitOut.MAX_READAHEAD, Math.max(readahead, MAX_READAHEAD)); // the kernel grants at most its own
        out.set(INT, InitOut.FLAGS, flags);
        out.set(SHORT, InitOut.MAX_BACKGROUND, (short) FuseSession.MAX_BACKGROUND);
        out.set(SHORT, InitOut.CONGESTION_THRESHOLD, (short) 48);
        out.set(INT, InitOut.MAX_WRITE, largestRequest);
        if (minor < 23) {
            return new Answer(COMPAT_22_INIT_OUT, new Negotiation(kernelMinor, minor, flags, 0, largestRead, pageSize));
        }
        out.set(INT, InitOut.TIME_GRAN, 1); // nanoseconds
        if ((flags & MAX_PAGES) != 0) {
            out.set(SHORT, InitOut.MAX_PAGES, (short) maxPages);
        }
        if (flags2 != 0) {
            out.set(INT, InitOut.FLAGS2, flags2);
            out.set(INT, InitOut.MAX_STACK_DEPTH, 1); // a backing file on a plain file system
        }
        return new Answer(INIT_OUT, new Negotiation(kernelMinor, minor, flags, flags2, largestRead, pageSize));
    }
}
