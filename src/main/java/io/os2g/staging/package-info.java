/**
 * The staging region: where the agent posts object bytes and the shim copies them from.
 *
 * <p>The region is a set of fixed-size segment files in the staging directory (by default under
 * {@code /dev/shm}, so they are memory, and any process can mmap them). Each segment is mapped once
 * with the FFM API. Space is handed out in small pages ({@link io.os2g.staging.PageAllocator}, 64 KiB
 * by default), so a 125 KB file takes two pages and a 1 GiB region holds thousands of small files.
 *
 * <p>The extent index maps {@code (inode, chunk)} to the pages that hold the chunk's bytes, the ETag
 * they came from, and a pin count. It lives in shared memory ({@link io.os2g.staging.ExtentTable}, a
 * file of slots next to the segments), so a reader in any process finds and pins a staged chunk with
 * no message to the agent ({@link io.os2g.staging.StagingView}; {@link io.os2g.staging.StagedChunk}
 * is a pin). A reader pins a chunk for the length of one copy; eviction
 * ({@link io.os2g.staging.ExtentIndex}: CLOCK, second chance for chunks read since the last sweep)
 * frees only unpinned chunks, in the same atomic step that makes the slot unpinnable, so a reader
 * never copies from pages that were handed to another chunk. The total of staged and in-flight bytes
 * never exceeds the region: a fetch that finds no free page evicts, and if every page is pinned or
 * in flight, waits (back-pressure) until one is freed or its deadline passes.
 */
package io.os2g.staging;
