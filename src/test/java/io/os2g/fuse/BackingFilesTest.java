package io.os2g.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The kernel fails an open (EIO) that would read an inode both by passthrough and through the page
 * cache, or by two backing files: each open's mode must keep its node's consistent.
 */
@Tag("unit")
class BackingFilesTest {

    private static final Path BLOCK = Path.of("/cache/a.blk");
    private static final Path OTHER_VERSION = Path.of("/cache/b.blk");

    /** Registers every file (ids 1, 2, ...), as a kernel with passthrough does, and records what it was told. */
    private static final class Recorded extends BackingFiles {
        final List<Path> registered = new ArrayList<>();
        final List<Integer> unregistered = new ArrayList<>();
        boolean refuse;
        boolean unprivileged;

        Recorded() {
            super(-1);
        }

        @Override
        int register(Path file) {
            if (unprivileged) {
                return -1; // -EPERM
            }
            if (refuse) {
                return 0;
            }
            registered.add(file);
            return registered.size();
        }

        @Override
        void unregister(int id) {
            unregistered.add(id);
        }
    }

    private static BackingFiles.Mode passthrough(int id) {
        return new BackingFiles.Mode(FuseSession.FOPEN_PASSTHROUGH, id);
    }

    private static final BackingFiles.Mode CACHED = new BackingFiles.Mode(FuseSession.FOPEN_KEEP_CACHE, 0);
    private static final BackingFiles.Mode DIRECT = new BackingFiles.Mode(FuseSession.FOPEN_DIRECT_IO, 0);

    @Test
    void opensOfOneNodeShareItsBackingFileWhichGoesWithTheLast() {
        Recorded files = new Recorded();
        assertEquals(passthrough(1), files.open(7, 100, BLOCK, false));
        assertEquals(passthrough(1), files.open(7, 101, BLOCK, false), "joins the node's backing file");
        assertEquals(passthrough(2), files.open(8, 102, BLOCK.resolveSibling("c.blk"), false), "another node, its own");
        files.release(100);
        assertEquals(List.of(), files.unregistered, "still open once");
        files.release(101);
        assertEquals(List.of(1), files.unregistered);
        assertEquals(passthrough(3), files.open(7, 103, BLOCK, false), "registered anew");
        assertEquals(4, files.passthroughOpens());
    }

    @Test
    void aNodeReadByPassthroughServesEveryLaterOpenFromItsFile() {
        Recorded files = new Recorded();
        assertEquals(passthrough(1), files.open(7, 100, BLOCK, false));
        assertEquals(passthrough(1), files.open(7, 101, null, false), "not on disk any more: still the node's file");
        assertEquals(passthrough(1), files.open(7, 102, OTHER_VERSION, false), "another version's file: the first's, until released");
        assertEquals(List.of(BLOCK), files.registered);
        files.release(101);
        files.release(102);
        files.release(100);
        assertEquals(List.of(1), files.unregistered);
        assertEquals(CACHED, files.open(7, 104, null, false), "the node is free again");
    }

    @Test
    void aNodeReadThroughThePageCacheKeepsItsLaterOpensThere() {
        Recorded files = new Recorded();
        assertEquals(CACHED, files.open(7, 100, null, false));
        assertEquals(CACHED, files.open(7, 101, BLOCK, false), "on disk now, but the node has a cached open");
        assertEquals(List.of(), files.registered);
        files.release(100);
        files.release(101);
        assertEquals(passthrough(1), files.open(7, 102, BLOCK, false), "no cached open left");
    }

    @Test
    void aRefusedRegistrationOrADirectOpenIsReadThroughTheSession() {
        Recorded files = new Recorded();
        files.refuse = true;
        assertEquals(CACHED, files.open(7, 100, BLOCK, false));
        files.refuse = false;
        assertEquals(CACHED, files.open(7, 101, BLOCK, false), "joins the cached open");
        assertEquals(DIRECT, files.open(9, 102, BLOCK, true), "a direct open (a control file) joins no mode");
        files.release(102);
        files.release(100);
        files.release(101);
        files.release(999); // unknown: nothing
        assertEquals(List.of(), files.unregistered);
        assertEquals(0, files.passthroughOpens());
    }

    @Test
    void aMountWithoutThePrivilegeStopsOfferingBackingFilesAfterTheFirstRefusal() {
        Recorded files = new Recorded();
        files.unprivileged = true;
        assertEquals(true, files.usable());
        assertEquals(CACHED, files.open(7, 100, BLOCK, false));
        assertEquals(false, files.usable(), "every later one would be refused too");
        files.unprivileged = false;
        assertEquals(CACHED, files.open(8, 101, BLOCK.resolveSibling("c.blk"), false), "not tried again");
        assertEquals(List.of(), files.registered);
    }
}
