package io.os2g.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.os2g.fuse.FuseFileSystem.Backing;
import io.os2g.fuse.FuseFileSystem.BackingFile;
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

    private static final BackingFile BLOCK = block("a");
    private static final BackingFile OTHER_VERSION = block("b");

    /** No file offered. */
    private static final BackingFile NONE = null;

    private static BackingFile block(String name) {
        return file(name, name.hashCode(), 100_000);
    }

    private static BackingFile file(String name, long inode, long size) {
        return new BackingFile(Path.of("/cache/" + name + ".blk"), inode, size, 1_700_000_000_000_000_000L, 1_700_000_000_000L);
    }

    /**
     * Registers every file (ids 1, 2, ...), as a kernel with passthrough does, and records what it was
     * told; a file of a registered id is unchanged unless the test says so.
     */
    private static final class Recorded extends BackingFiles {
        final List<BackingFile> registered = new ArrayList<>();
        final List<Integer> unregistered = new ArrayList<>();
        final List<Integer> changed = new ArrayList<>();
        final List<BackingFile> reused = new ArrayList<>();
        int verifications;
        boolean refuse;
        boolean unprivileged;

        Recorded() {
            super(-1, BackingFiles.IDLE_MAX);
        }

        /** An open offered {@code file} (NONE: none), which verifies as {@code file}. */
        Mode open(long node, long handle, BackingFile file, boolean directIo) {
            return open(node, handle, file == null ? null : offer(file.path(), file), directIo);
        }

        /** An offer of {@code path}, which verifies as {@code verified} (null: the cache has no good copy). */
        Backing offer(Path path, BackingFile verified) {
            return new Backing() {
                @Override
                public Path path() {
                    return path;
                }

                @Override
                public BackingFile verify() {
                    verifications++;
                    return verified;
                }

                @Override
                public void reused(BackingFile kept) {
                    reused.add(kept);
                }
            };
        }

        @Override
        boolean unchanged(int id, BackingFile file) {
            return !changed.contains(id);
        }

        @Override
        int register(BackingFile file) {
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
    void opensOfOneNodeShareItsBackingFileWhichIsKeptForItsNextOpen() {
        Recorded files = new Recorded();
        assertEquals(passthrough(1), files.open(7, 100, BLOCK, false));
        assertEquals(passthrough(1), files.open(7, 101, BLOCK, false), "joins the node's backing file");
        assertEquals(passthrough(2), files.open(8, 102, block("c"), false), "another node, its own");
        files.release(100);
        files.release(101);
        assertEquals(List.of(), files.unregistered, "kept after the last release");
        assertEquals(1, files.idle());
        assertEquals(passthrough(1), files.open(7, 103, BLOCK, false), "the same file, unchanged: taken again");
        assertEquals(List.of(BLOCK, block("c")), files.registered);
        assertEquals(2, files.verifications, "the kept file is not verified again");
        assertEquals(List.of(BLOCK), files.reused, "but counted as a use of it");
        assertEquals(4, files.passthroughOpens());
        assertEquals(1, files.backingsReused());
        assertEquals(0, files.idle());
    }

    @Test
    void aKeptBackingFileGoesWhenItsNodeOffersAnotherFileOrNoneOrItChanged() {
        Recorded files = new Recorded();
        files.open(7, 100, BLOCK, false);
        files.release(100);
        assertEquals(passthrough(2), files.open(7, 101, OTHER_VERSION, false), "a new version: its own file");
        assertEquals(List.of(1), files.unregistered);
        files.release(101);
        files.changed.add(2); // written, touched, or unlinked since it was verified
        assertEquals(passthrough(3), files.open(7, 102, OTHER_VERSION, false), "the same path, changed since: verified, registered anew");
        assertEquals(List.of(1, 2), files.unregistered);
        assertEquals(3, files.verifications);
        files.release(102);
        files.changed.add(3);
        assertEquals(CACHED, files.open(7, 103, files.offer(OTHER_VERSION.path(), null), false), "changed, and no good copy left");
        assertEquals(List.of(1, 2, 3), files.unregistered);
        files.release(103);
        assertEquals(passthrough(4), files.open(7, 104, OTHER_VERSION, false));
        files.release(104);
        assertEquals(CACHED, files.open(7, 105, NONE, false), "nothing offered: read through the session");
        assertEquals(List.of(1, 2, 3, 4), files.unregistered);
        files.release(105);
        assertEquals(0, files.idle());
        assertEquals(0, files.backingsReused());
    }

    @Test
    void theBackingFilesKeptAreBoundedByCountAndBytesTheLongestIdleGoingFirst() {
        Recorded files = new Recorded();
        for (int i = 0; i < BackingFiles.IDLE_MAX + 2; i++) {
            files.open(i, 1000 + i, file("n" + i, i, 1), false);
            files.release(1000 + i);
        }
        assertEquals(BackingFiles.IDLE_MAX, files.idle());
        assertEquals(List.of(1, 2), files.unregistered, "the two released first");
        assertEquals(passthrough(BackingFiles.IDLE_MAX + 2), files.open(BackingFiles.IDLE_MAX + 1, 1,
                file("n" + (BackingFiles.IDLE_MAX + 1), BackingFiles.IDLE_MAX + 1, 1), false));

        Recorded big = new Recorded();
        BackingFile half = file("half", 1, BackingFiles.IDLE_MAX_BYTES / 2);
        BackingFile more = file("more", 2, BackingFiles.IDLE_MAX_BYTES / 2 + 1);
        big.open(1, 10, half, false);
        big.open(2, 11, more, false);
        big.release(10);
        big.release(11);
        assertEquals(List.of(1), big.unregistered, "both would hold more than the bound");
        assertEquals(1, big.idle());
    }

    @Test
    void aNodeReadByPassthroughServesEveryLaterOpenFromItsFile() {
        Recorded files = new Recorded();
        assertEquals(passthrough(1), files.open(7, 100, BLOCK, false));
        assertEquals(passthrough(1), files.open(7, 101, NONE, false), "not on disk any more: still the node's file");
        assertEquals(passthrough(1), files.open(7, 102, OTHER_VERSION, false), "another version's file: the first's, until released");
        assertEquals(List.of(BLOCK), files.registered);
        files.release(101);
        files.release(102);
        files.release(100);
        assertEquals(List.of(), files.unregistered, "kept");
        assertEquals(CACHED, files.open(7, 104, NONE, false), "the node is free again");
        assertEquals(List.of(1), files.unregistered, "let go: its open offered none");
    }

    @Test
    void aNodeReadThroughThePageCacheKeepsItsLaterOpensThere() {
        Recorded files = new Recorded();
        assertEquals(CACHED, files.open(7, 100, NONE, false));
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
        assertEquals(CACHED, files.open(8, 101, block("c"), false), "not tried again");
        assertEquals(List.of(), files.registered);
    }
}
