/** Counters of a mount: what the shim served, from staging or after a miss, and what failed. */
package io.os2g.metrics;
