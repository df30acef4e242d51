package io.os2g.staging;

import java.io.IOException;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A host's staging region filled by an agent on another machine. The agent places each chunk (its
 * {@link ExtentIndex} with a {@link ExtentIndex.Mirror} chooses the slot and pages, as for a region it
 * shares) and posts the bytes; this side receives them straight into those pages and only then
 * publishes the chunk in the same slot of its own extent table. Readers use {@link #view()} as for any
 * region (copy, splice, extents for a GPU, mmap), and never see a chunk before all its bytes are in.
 *
 * <p>The agent frees nothing here: it recalls a chunk, and this side frees the slot once no reader
 * holds it and says so ({@link #returnable}), after which the agent may reuse the slot and pages. A
 * host that reconnects to a restarted agent hands it {@link #held()}, so chunks staged here survive.
 * One thread receives; recalls and returns may come from others.
 */
public final class PostedRegion implements AutoCloseable {

    private final StagingRegion region;
    private final ExtentTable table;
    private final StagingView view;
    /** Pages of chunks published here, recalled or not; guarded by {@code this}. */
    private final BitSet taken = new BitSet();
    /** Live slots' pages; guarded by {@code this}. */
    private final Map<Integer, int[]> pagesOf = new HashMap<>();
    /** Recalled slots a reader still held when asked; guarded by {@code this}. */
    private final List<Integer> pinnedAtRecall = new ArrayList<>();
    /** What lives and dies with the region (its GPU registration); closed first. */
    private volatile AutoCloseable attachment;

    private PostedRegion(StagingRegion region, ExtentTable table) {
        this.region = region;
        this.table = table;
        this.view = new StagingView(region, table, false);
    }

    /** Creates the region's segments and an empty extent table shaped as the agent's for chunks up to {@code maxChunkBytes}. */
    public static PostedRegion create(StagingConfig config, long maxChunkBytes) {
        StagingRegion region = StagingRegion.create(config);
        try {
            ExtentTable table = ExtentTable.create(config.directory(), region.pageCount(),
                    ExtentIndex.maxPages(region.pageCount(), region.pageSize(), maxChunkBytes), region.arena());
            return new PostedRegion(region, table);
        } catch (IOException | RuntimeException e) {
            region.close();
            throw new StagingException("cannot create the extent table in " + config.directory() + ": " + e.getMessage(), e);
        }
    }

    public StagingConfig config() {
        return region.config();
    }

    /** The readers' side. */
    public StagingView view() {
        return view;
    }

    /** The region itself (for GPU registration). */
    public StagingRegion region() {
        return region;
    }

    /** Ties {@code what} (a GPU registration of the region) to the region: closed before it is unmapped. */
    public void attach(AutoCloseable what) {
        this.attachment = what;
    }

    /**
     * Reads a posted chunk's {@code length} bytes from {@code from} into {@code pages}, then publishes
     * it in {@code slot}. Nothing is visible if the bytes do not all arrive.
     *
     * @throws IOException when the bytes end early, or the post names a slot or pages this side holds
     *     or does not have (a peer out of step: the link is dropped)
     */
    public void receive(int slot, ChunkKey key, long etagHash, int length, int[] pages, ReadableByteChannel from)
            throws IOException {
        synchronized (this) {
            check(slot, length, pages);
        }
        region.receive(pages, length, from);
        synchronized (this) {
            check(slot, length, pages); // a recall cannot come for a slot not yet published; checked again all the same
            for (int page : pages) {
                taken.set(page);
            }
            pagesOf.put(slot, pages);
            table.publish(slot, key.inode(), key.index(), etagHash, length, length, pages);
        }
    }

    private void check(int slot, int length, int[] pages) throws IOException {
        if (slot < 0 || slot >= table.slotCount() || !table.isFree(slot)) {
            throw new IOException("posted chunk names slot " + slot + ", which is not free here");
        }
        if (pages.length == 0 || pages.length > table.maxPages() || length < 0 || length > (long) pages.length * region.pageSize()) {
            throw new IOException("posted chunk of " + length + " bytes in " + pages.length + " pages does not fit");
        }
        for (int page : pages) {
            if (page < 0 || page >= region.pageCount() || taken.get(page)) {
                throw new IOException("posted chunk names page " + page + ", which is out of range or holds another chunk");
            }
        }
    }

    /** Sends the first {@code length} bytes of a written part's pages to the agent. */
    public void sendPart(int[] pages, long length, WritableByteChannel to) throws IOException {
        region.transferTo(pages, 0, length, to);
    }

    /** The agent evicted the chunk in {@code slot}: it is found no more here. True when freed at once (return it now). */
    public synchronized boolean recall(int slot) {
        int[] pages = pagesOf.get(slot);
        if (pages == null) {
            return true; // not here (never published, or freed already): the agent may have it back
        }
        table.retire(slot);
        if (free(slot, pages)) {
            return true;
        }
        pinnedAtRecall.add(slot);
        return false;
    }

    /** Recalled slots that readers have let go of since, now free: to be returned to the agent. */
    public synchronized int[] returnable() {
        if (pinnedAtRecall.isEmpty()) {
            return new int[0];
        }
        List<Integer> freed = new ArrayList<>();
        pinnedAtRecall.removeIf(slot -> free(slot, pagesOf.get(slot)) && freed.add(slot));
        return freed.stream().mapToInt(Integer::intValue).toArray();
    }

    /** Whether recalled slots still wait for readers. */
    public synchronized boolean recallsPending() {
        return !pinnedAtRecall.isEmpty();
    }

    private boolean free(int slot, int[] pages) {
        if (!table.tryFree(slot)) {
            return false;
        }
        pagesOf.remove(slot);
        for (int page : pages) {
            taken.clear(page);
        }
        return true;
    }

    /** What this side holds, for an agent that starts a session again: recalled chunks under chunk -1. */
    public synchronized List<ExtentIndex.Held> held() {
        List<ExtentIndex.Held> held = new ArrayList<>(pagesOf.size());
        pagesOf.forEach((slot, pages) -> held.add(new ExtentIndex.Held(slot, new ChunkKey(table.inode(slot), table.chunk(slot)),
                table.etagHashOf(slot), table.length(slot), pages)));
        return held;
    }

    @Override
    public void close() {
        AutoCloseable a = attachment;
        if (a != null) {
            try {
                a.close();
            } catch (Exception e) {
                // the registration goes with the process; the region is unmapped all the same
            }
        }
        region.close();
    }
}
