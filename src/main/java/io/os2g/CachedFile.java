package io.os2g;

import java.nio.file.Path;

/**
 * A file of the disk cache that may hold exactly an open file's bytes, offered for the kernel to read
 * itself (FUSE passthrough): where it is, found without touching it, and the file verified, which may
 * read it whole.
 */
public interface CachedFile {

    /** Where the file is: the same path holds the same object version's bytes. */
    Path path();

    /** The file, its bytes verified now (or remembered as verified while unchanged); null when the cache has no good copy. */
    VerifiedFile verify();

    /** The kernel reads {@code kept} again, unchanged since it was verified: a use of it, as {@link #verify} counts one. */
    void reused(VerifiedFile kept);
}
