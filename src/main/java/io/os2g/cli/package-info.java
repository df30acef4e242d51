/**
 * The command line: {@code os2g mount}, {@code agent}, {@code stats}, {@code warm}, {@code index} and
 * {@code demo} (and {@code s3-server}, where its optional jar is installed). Commands map flags (and
 * fstab's {@code -o} options) to the components' configs and report; they wire nothing together
 * themselves, handing a {@link io.os2g.runtime.MountConfig} or an
 * {@link io.os2g.runtime.AgentServiceConfig} to {@code io.os2g.runtime}. A mistake a user can make ends
 * in one line on stderr and exit code 2; stack traces only with {@code --debug}.
 */
package io.os2g.cli;
