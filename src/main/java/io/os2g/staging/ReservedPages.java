package io.os2g.staging;

/**
 * Pages the agent set aside for one piece of a file written through the mount: the writer copies up
 * to {@code capacity} bytes into them ({@link StagingView#writePages}), the agent uploads them.
 *
 * @param number the piece's number in its file, from 1
 * @param pages the page numbers, in order
 * @param capacity the bytes the piece holds when full
 */
public record ReservedPages(int number, int[] pages, int capacity) {

    @Override
    public boolean equals(Object o) {
        return o instanceof ReservedPages r && r.number == number && r.capacity == capacity && java.util.Arrays.equals(r.pages, pages);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * number + capacity) + java.util.Arrays.hashCode(pages);
    }

    @Override
    public String toString() {
        return "ReservedPages[number=" + number + ", pages=" + pages.length + ", capacity=" + capacity + "]";
    }
}
