/**
 * Composition: a running mount ({@link io.os2g.runtime.Gateway}: store, namespace, staging region,
 * agent, link and shim, with the agent in this process or behind an agent process's socket) and a
 * running agent process ({@link io.os2g.runtime.AgentService}: one session per shim, each with its own
 * store client, staging region and agent). {@link io.os2g.runtime.Preflight} checks what a user can get
 * wrong before anything is set up; every such failure is a {@link io.os2g.runtime.UsageError}. This
 * package parses no command line: {@code io.os2g.cli} does, and hands it finished configs.
 */
package io.os2g.runtime;
