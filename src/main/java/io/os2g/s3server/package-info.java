/**
 * The S3 server of {@code os2g demo}, the end-to-end tests and the benchmarks: S3Proxy over a
 * directory or memory, with an optional delay on GET, LIST and HEAD. An optional part of os2g: it is
 * built into its own jar ({@code os2g-s3-server.jar}, with S3Proxy's libraries beside it), which the
 * launcher puts on the class path only for {@code demo} and {@code s3-server}, and which
 * {@code mount-scripts/install.sh} installs only when asked ({@code --with-s3-server}). Nothing else in
 * os2g imports it.
 */
package io.os2g.s3server;
