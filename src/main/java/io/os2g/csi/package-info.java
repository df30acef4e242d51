/**
 * The Kubernetes CSI node plugin ({@code os2g csi}): Identity and Node services over gRPC, one
 * {@code os2g mount} process per (volume, attributes, credentials) on the node, started so that it
 * outlives the plugin, and each pod's target a bind of it (docs/KUBERNETES.md).
 */
package io.os2g.csi;
