package io.os2g.host;

import io.os2g.CachedFile;
import io.os2g.VerifiedFile;
import io.os2g.fuse.FuseFileSystem;
import java.nio.file.Path;

/** The agent's disk-cache file of an open, offered to the kernel as the open's backing file. */
record CachedBacking(CachedFile file) implements FuseFileSystem.Backing {

    @Override
    public Path path() {
        return file.path();
    }

    @Override
    public FuseFileSystem.BackingFile verify() {
        VerifiedFile v = file.verify();
        return v == null ? null : new FuseFileSystem.BackingFile(v.path(), v.inode(), v.size(), v.changedNanos(), v.modifiedMillis());
    }

    @Override
    public void reused(FuseFileSystem.BackingFile kept) {
        file.reused(new VerifiedFile(kept.path(), kept.inode(), kept.size(), kept.changedNanos(), kept.modifiedMillis()));
    }
}
