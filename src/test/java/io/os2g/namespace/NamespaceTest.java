package io.os2g.namespace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.github.benmanes.caffeine.cache.Ticker;
import io.os2g.Errno;
import io.os2g.support.ReferenceStore;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class NamespaceTest {

    private final ReferenceStore store = new ReferenceStore();

    private Namespace namespace(String prefix) {
        return new Namespace(store, prefix, Duration.ofMinutes(5));
    }

    @Test
    void implicitDirectoriesComeFromCommonPrefixes() {
        store.put("train/cat/1.jpg", 10).put("train/dog/2.jpg", 20).put("README", 3);
        Namespace ns = namespace("");
        assertEquals(List.of("README", "train"), List.copyOf(ns.list(ns.root()).entries().keySet()));
        Node.Dir train = assertInstanceOf(Node.Dir.class, ns.resolve("/train"));
        assertEquals(List.of("cat", "dog"), List.copyOf(ns.list(train).entries().keySet()));
        Node.File file = assertInstanceOf(Node.File.class, ns.resolve("/train/dog/2.jpg"));
        assertEquals(20, file.size());
        assertEquals(store.etag("train/dog/2.jpg"), file.etag());
    }

    @Test
    void markerObjectMakesAnEmptyDirectoryAndIsNotAnEntry() {
        store.put("empty/", 0).put("data/", 0).put("data/x", 1);
        Namespace ns = namespace("");
        Node.Dir empty = assertInstanceOf(Node.Dir.class, ns.resolve("/empty"));
        assertTrue(ns.list(empty).entries().isEmpty());
        assertEquals(List.of("x"), List.copyOf(ns.list((Node.Dir) ns.resolve("/data")).entries().keySet()));
    }

    @Test
    void directoryWinsOverAFileOfTheSameName() {
        store.put("a", 5).put("a/b", 6);
        Namespace ns = namespace("");
        assertInstanceOf(Node.Dir.class, ns.resolve("/a"));
        assertEquals(1, ns.list(ns.root()).entries().size());
        assertInstanceOf(Node.File.class, ns.resolve("/a/b"));
    }

    @Test
    void invalidNamesAreSkippedNotFatal() {
        store.put("ok", 1).put("a//b", 1).put("./x", 1).put("../escape", 1).put("d/./y", 1).put("d/z", 1);
        Namespace ns = namespace("");
        // "a//b" makes a directory "a" whose only entry (an empty name) is skipped
        assertEquals(List.of("a", "d", "ok"), List.copyOf(ns.list(ns.root()).entries().keySet()));
        assertTrue(ns.list((Node.Dir) ns.resolve("/a")).entries().isEmpty());
        assertEquals(List.of("z"), List.copyOf(ns.list((Node.Dir) ns.resolve("/d")).entries().keySet()));
    }

    @Test
    void missingPathsAreEnoentAndFilesAsDirectoriesEnotdir() {
        store.put("f", 1);
        Namespace ns = namespace("");
        assertEquals(Errno.ENOENT, assertThrows(NamespaceException.class, () -> ns.resolve("/nope")).errno());
        assertEquals(Errno.ENOTDIR, assertThrows(NamespaceException.class, () -> ns.resolve("/f/x")).errno());
    }

    @Test
    void prefixMountShowsOnlyThePrefix() {
        store.put("train/a", 1).put("val/b", 1).put("trainer", 1);
        Namespace ns = namespace("train/");
        assertEquals(List.of("a"), List.copyOf(ns.list(ns.root()).entries().keySet()));
    }

    @Test
    void aDirectoryIsListedOnceAndNegativeLookupsCostNothing() {
        store.put("d/a", 1).put("d/b", 1);
        Namespace ns = namespace("");
        for (int i = 0; i < 10; i++) {
            ns.resolve("/d/a");
            assertThrows(NamespaceException.class, () -> ns.resolve("/d/missing"));
        }
        assertEquals(2, store.lists.get()); // the root and d/, once each
    }

    @Test
    void readdirListsSubdirectoriesAheadOnce() throws InterruptedException {
        for (int d = 0; d < 20; d++) {
            store.put("d" + d + "/f", 1);
        }
        Namespace ns = namespace("");
        ns.readdir(ns.root());
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (store.lists.get() < 21 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(21, store.lists.get(), "the root, then each sub-directory once, ahead of the walker");
        ns.readdir(ns.root());
        for (int d = 0; d < 20; d++) {
            ns.readdir((Node.Dir) ns.resolve("/d" + d));
        }
        assertEquals(21, store.lists.get(), "a walk after the listing ahead costs no further LIST");
        ns.close();
    }

    @Test
    void listingsExpireAfterTheTtl() {
        AtomicLong now = new AtomicLong();
        Ticker ticker = now::get;
        Namespace ns = new Namespace(store, "", Duration.ofSeconds(10), ticker);
        store.put("a", 1);
        assertThrows(NamespaceException.class, () -> ns.resolve("/b"));
        store.put("b", 2);
        assertThrows(NamespaceException.class, () -> ns.resolve("/b")); // cached negative
        now.addAndGet(Duration.ofSeconds(11).toNanos());
        assertEquals(2, ((Node.File) ns.resolve("/b")).size());
    }

    @Test
    void inodesAreStablePerKeyAndDistinctForFileAndDirectoryOfOneName() {
        store.put("x/y", 1).put("x", 1);
        Namespace ns = new Namespace(store, "", Duration.ZERO);
        long first = ns.resolve("/x/y").inode();
        assertEquals(first, ns.resolve("/x/y").inode());
        assertNotEquals(first, ns.resolve("/x").inode());
        assertEquals(InodeTable.ROOT, ns.resolve("/").inode());
    }

    @Test
    void whatTheMountChangedStandsOverItsListingsUntilTheyCanShowIt() {
        store.put("ckpt/old.pt", 5).put("ckpt/gone.pt", 6);
        java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong();
        Namespace ns = new Namespace(store, "", Duration.ofSeconds(10), now::get);
        Node.Dir ckpt = assertInstanceOf(Node.Dir.class, ns.resolve("/ckpt"));

        Node.File writing = new Node.File(ns.inodeOf("ckpt/new.pt"), "ckpt/new.pt", 0, "", 0);
        ns.hold(ckpt, "new.pt", writing);
        Node.Dir made = new Node.Dir(ns.inodeOf("ckpt/runs/"), "ckpt/runs/");
        ns.hold(ckpt, "runs", made);
        ns.deleted(ckpt, "gone.pt");
        assertEquals(writing, ns.resolve("/ckpt/new.pt"));
        assertEquals(made, ns.resolve("/ckpt/runs"));
        assertEquals(Errno.ENOENT, assertThrows(NamespaceException.class, () -> ns.resolve("/ckpt/gone.pt")).errno());
        assertEquals(java.util.Set.of("old.pt", "new.pt", "runs"), ns.list(ckpt).entries().keySet());

        Node.File published = new Node.File(writing.inode(), "ckpt/new.pt", 7, "e7", 1);
        ns.published(ckpt, "new.pt", published);
        assertEquals(published, ns.resolve("/ckpt/new.pt"));
        ns.release(ckpt, "runs");
        assertEquals(java.util.Set.of("old.pt", "new.pt"), ns.list(ckpt).entries().keySet());

        // a listing made after the TTL speaks for the published and deleted keys again
        now.addAndGet(Duration.ofSeconds(11).toNanos());
        store.put("ckpt/new.pt", 7);
        assertEquals(store.etag("ckpt/new.pt"), assertInstanceOf(Node.File.class, ns.resolve("/ckpt/new.pt")).etag());
        assertInstanceOf(Node.File.class, ns.resolve("/ckpt/gone.pt"), "still in the bucket: the listing says so");
    }
}
