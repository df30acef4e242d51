/**
 * The object store as os2g sees it: list a directory level, read a byte range of one object version.
 *
 * <p>{@link io.os2g.store.ObjectStore} is the whole surface; {@link io.os2g.store.MinioObjectStore}
 * implements it with the MinIO Java client, which speaks to MinIO, AWS S3, Ceph RGW and any other
 * S3-compatible endpoint, except for reads: each is one synchronous ranged GET on the client's OkHttp
 * connections ({@link io.os2g.store.RangedGet}), signed by {@link io.os2g.store.SigV4}, the agent's CPU
 * per small file being what bounds a shuffled epoch. Every call has a deadline and a bounded number of retries
 * ({@link io.os2g.store.RetryPolicy}); what still fails becomes a {@link io.os2g.store.StoreException}
 * whose {@link io.os2g.store.StoreException.Kind} maps once to an errno. This package knows nothing of
 * chunks, staging or FUSE.
 */
package io.os2g.store;
