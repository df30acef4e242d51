/**
 * The file tree a mount shows, built from listings.
 *
 * <p>A directory is one ListObjectsV2 level (delimiter {@code /}, all pages) under its prefix.
 * {@link io.os2g.namespace.DirectoryBuilder} turns a {@link io.os2g.store.Listing} into a
 * {@link io.os2g.namespace.Directory}, applying the rules in one place: names are validated into
 * {@link io.os2g.namespace.EntryName}s (empty segments, {@code .}, {@code ..}, NUL and over-long names
 * are skipped and logged once); a key {@code a} beside a prefix {@code a/} is hidden by the directory;
 * marker objects {@code dir/} make a directory. {@link io.os2g.namespace.Namespace} caches each
 * directory for the metadata TTL (Caffeine), which also caches negative lookups: a name absent from a
 * cached directory is absent without a request. Inodes are stable per key for the life of the mount
 * ({@link io.os2g.namespace.InodeTable}).
 */
package io.os2g.namespace;
