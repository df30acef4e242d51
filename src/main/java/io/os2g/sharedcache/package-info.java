/**
 * The cluster's tier below each node's disk cache: blocks of origin objects as objects of a cache
 * bucket on an S3-compatible store near the GPUs ({@link io.os2g.sharedcache.SharedCache}), keyed as the
 * disk cache's blocks are, verified on every read, written behind the reads, bypassed while it fails.
 * It speaks S3 through the store client; it knows nothing of chunks, staging or FUSE.
 */
package io.os2g.sharedcache;
