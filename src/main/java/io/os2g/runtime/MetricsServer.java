package io.os2g.runtime;

import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.net.InetSocketAddress;

/** The Prometheus endpoint of a mount or an agent ({@code --metrics-port}). */
final class MetricsServer {

    private MetricsServer() {
    }

    /** Starts serving {@code registry} at {@code address}; a port in use is the user's to fix. */
    static HTTPServer serve(InetSocketAddress address, PrometheusRegistry registry) {
        try {
            return HTTPServer.builder().inetAddress(address.getAddress()).port(address.getPort()).registry(registry).buildAndStart();
        } catch (IOException e) {
            throw new UsageError("--metrics-port: cannot listen on " + address + ": " + e.getMessage());
        }
    }
}
