/**
 * The disk tier below the staging region: blocks of objects on a local disk, keyed by store, bucket,
 * key, ETag and range ({@link io.os2g.diskcache.BlockKey}), checksummed, written whole by rename,
 * shared by every os2g process that names the directory and kept across remounts, bounded by size and
 * a floor of free space ({@link io.os2g.diskcache.DiskCache}). The agent reads and fills it; it knows
 * nothing of chunks, staging or FUSE.
 */
package io.os2g.diskcache;
