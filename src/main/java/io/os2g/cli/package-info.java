/**
 * The command line: {@code os2g mount}, {@code agent}, {@code stats}, {@code warm}, {@code index} and
 * {@code demo} (and {@code s3-server}, where its optional jar is installed). Commands parse flags (and
 * fstab's {@code -o} options), hand them to {@code io.os2g.runtime}'s builders, which hold the rules
 * ({@link io.os2g.runtime.MountConfigBuilder}, {@link io.os2g.runtime.AgentServiceConfigBuilder},
 * {@link io.os2g.runtime.StoreSettings}), and print; they name no other os2g package. A mistake a
 * user can make ends in one line on stderr and exit code 2; stack traces only with {@code --debug}.
 */
package io.os2g.cli;
