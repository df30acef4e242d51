package io.os2g.staging;

/**
 * Free pages of the region, as a stack. Not thread-safe: {@link ExtentIndex} calls it under its lock.
 * Pages start in ascending order, so a young region hands out contiguous runs; later runs may be
 * scattered, which costs nothing but one memcpy per page on reads.
 */
final class PageAllocator {

    private final int[] free;
    private int top;

    PageAllocator(int pageCount) {
        this(pageCount, new java.util.BitSet());
    }

    /** Every page free but those in {@code taken}. */
    PageAllocator(int pageCount, java.util.BitSet taken) {
        free = new int[pageCount];
        for (int i = pageCount - 1; i >= 0; i--) {
            if (!taken.get(i)) {
                free[top++] = i;
            }
        }
    }

    int freePages() {
        return top;
    }

    int capacity() {
        return free.length;
    }

    /** Takes {@code count} pages; the caller has checked {@link #freePages()}. */
    int[] take(int count) {
        if (count > top) {
            throw new IllegalStateException("insufficient pages: required=" + count + ", free=" + top);
        }
        int[] pages = new int[count];
        for (int i = 0; i < count; i++) {
            pages[i] = free[--top];
        }
        return pages;
    }

    void give(int[] pages) {
        for (int i = pages.length - 1; i >= 0; i--) {
            free[top++] = pages[i];
        }
    }
}
