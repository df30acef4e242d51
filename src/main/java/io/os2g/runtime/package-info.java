/**
 * Composition: an agent side built and closed in one order ({@link io.os2g.runtime.AgentStack}: store
 * client and views, staging region, namespace, agent, uploads), a running mount
 * ({@link io.os2g.runtime.Gateway}: the shim and a link to an agent side in this process or behind an
 * agent process's socket), a running agent process ({@link io.os2g.runtime.AgentService}: one agent
 * side per shim) and the CSI plugin. The rules between options are here too
 * ({@link io.os2g.runtime.MountConfigBuilder}, {@link io.os2g.runtime.AgentServiceConfigBuilder},
 * {@link io.os2g.runtime.StoreSettings}), whichever way the options came (command line, fstab, CSI
 * volume attributes). {@link io.os2g.runtime.Preflight} checks what a user can get
 * wrong before anything is set up; every such failure is a {@link io.os2g.runtime.UsageError}. This
 * package parses no command line: {@code io.os2g.cli} does, and hands it finished configs.
 */
package io.os2g.runtime;
