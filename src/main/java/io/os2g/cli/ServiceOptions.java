package io.os2g.cli;

import io.os2g.runtime.UsageError;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** Options of the commands that run as services (mount, agent): where the log goes, where metrics are served. */
final class ServiceOptions {

    @Option(names = "--log-file", paramLabel = "FILE",
            description = "Append the log to FILE instead of writing it to stderr (rotate with logrotate's copytruncate).")
    Path logFile;

    @Option(names = "--metrics-port", paramLabel = "[ADDRESS:]PORT",
            description = "Serve Prometheus metrics at http://ADDRESS:PORT/metrics (default address: 127.0.0.1; 0.0.0.0:PORT for every interface).")
    String metricsPort;

    @Option(names = "--debug", description = "Debug logging, and stack traces on errors.")
    boolean debug;

    /** Sends the log where the options say; call first. */
    void configureLogging() {
        Logging.configure(debug, logFile);
    }

    /** Where {@code --metrics-port} asks to listen; null without it. */
    InetSocketAddress metricsAddress() {
        if (metricsPort == null) {
            return null;
        }
        int colon = metricsPort.lastIndexOf(':');
        String host = colon < 0 ? "" : metricsPort.substring(0, colon).replaceAll("^\\[(.*)]$", "$1");
        int port;
        try {
            port = Integer.parseInt(metricsPort.substring(colon + 1));
        } catch (NumberFormatException e) {
            port = -1;
        }
        if (port < 0 || port > 65535) {
            throw new UsageError("--metrics-port must be PORT or ADDRESS:PORT with a port from 1 to 65535 (0: any free port, logged): " + metricsPort);
        }
        try {
            return host.isEmpty() ? new InetSocketAddress(InetAddress.getLoopbackAddress(), port) : new InetSocketAddress(InetAddress.getByName(host), port);
        } catch (UnknownHostException e) {
            throw new UsageError("--metrics-port: unknown address " + host);
        }
    }
}
