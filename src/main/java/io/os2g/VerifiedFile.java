package io.os2g;

import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A file whose bytes were verified, as it was then: its inode, size, change time and modification
 * time. A file still at that inode, size and change time holds the same bytes (a write, a truncate or a
 * touch changes the change time, which no caller can set back), so it can be handed on without reading
 * it again.
 */
public record VerifiedFile(Path path, long inode, long size, long changedNanos, long modifiedMillis) {

    /** The attributes {@link #of(Path, Map)} reads. */
    public static final String ATTRIBUTES = "unix:dev,ino,size,ctime,lastModifiedTime";

    /** {@code path} as stat(2) found it, from its {@link #ATTRIBUTES}. */
    public static VerifiedFile of(Path path, Map<String, Object> attributes) {
        return new VerifiedFile(path, (Long) attributes.get("ino"), (Long) attributes.get("size"),
                ((FileTime) attributes.get("ctime")).to(TimeUnit.NANOSECONDS),
                ((FileTime) attributes.get("lastModifiedTime")).toMillis());
    }
}
