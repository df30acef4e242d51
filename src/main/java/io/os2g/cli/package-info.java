/**
 * The command line: {@code os2g mount}, {@code os2g demo} and the hidden {@code os2g s3-server} used by
 * the demo, tests and benchmarks. Commands map flags to the components' configs, check what a user can
 * get wrong before mounting ({@link io.os2g.cli.Preflight}), and hand over to
 * {@link io.os2g.cli.Gateway}, which composes store, namespace, staging, agent, link and shim. A
 * mistake a user can make ends in one line on stderr and exit code 2.
 */
package io.os2g.cli;
