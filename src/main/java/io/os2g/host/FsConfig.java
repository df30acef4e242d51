package io.os2g.host;

import java.time.Duration;

/**
 * What the file system reports and how long it waits.
 *
 * @param uid owner of every file and directory
 * @param gid group of every file and directory
 * @param fileMode permission bits of files (default 0444)
 * @param dirMode permission bits of directories (default 0555)
 * @param mountTimeMillis mtime of directories (they have none in an object store)
 * @param readDeadline longest a read waits for the agent before it fails with EIO
 * @param mountPoint where the mount is, absolute (hint lines may name files by their absolute path)
 * @param writes what the mount may change in its bucket
 */
public record FsConfig(int uid, int gid, int fileMode, int dirMode, long mountTimeMillis, Duration readDeadline,
                       String mountPoint, WritePolicy writes) {
}
