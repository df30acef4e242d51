/**
 * The object store as os2g sees it: list a directory level, read a byte range of one object version,
 * and for a mount that writes, upload, copy and delete objects.
 *
 * <p>{@link io.os2g.store.ObjectStore} is the read surface; {@link io.os2g.store.MinioObjectStore}
 * implements it for MinIO, AWS S3, Ceph RGW and any other S3-compatible endpoint. Reads and listings,
 * the hot paths, are os2g's own: a ranged GET on kept-alive sockets whose body the agent reads straight
 * into staging for an {@code http://} endpoint ({@link io.os2g.store.SocketHttp}), one synchronous OkHttp
 * call for {@code https://} ({@link io.os2g.store.RangedGet}), one OkHttp call per ListObjectsV2 page read
 * with StAX ({@link io.os2g.store.ListObjectsV2}), all signed by {@link io.os2g.store.SigV4}. The MinIO
 * client does the rest (HEADs, the bucket's URL, and {@link io.os2g.store.ObjectUploads}: multipart
 * uploads, PUTs, copies and deletes of the files a mount writes). Every call has a deadline and a bounded number of
 * retries ({@link io.os2g.store.RetryPolicy}); what still fails becomes a
 * {@link io.os2g.store.StoreException} whose {@link io.os2g.store.StoreException.Kind} maps once to an
 * errno. This package knows nothing of chunks, staging or FUSE.
 */
package io.os2g.store;
