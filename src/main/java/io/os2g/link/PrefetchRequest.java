package io.os2g.link;

import java.util.List;

/**
 * Files to stage in this order: ahead of the readers (the paths written to {@code /.os2g/prefetch}),
 * or all of them ({@code warm}: {@code /.os2g/warm}). {@code replace} drops what was hinted before
 * and not read yet (a new epoch's order).
 */
public record PrefetchRequest(List<OpenRequest> files, boolean replace, boolean warm) {

    public PrefetchRequest {
        files = List.copyOf(files);
    }
}
