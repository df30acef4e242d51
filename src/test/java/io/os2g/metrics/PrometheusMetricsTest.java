package io.os2g.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.os2g.Errno;
import io.os2g.support.MetricsScrape;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.net.InetAddress;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The exposition as Prometheus scrapes it over HTTP: names, types, labels and values. */
@Tag("unit")
class PrometheusMetricsTest {

    private static MetricsScrape scrape(PrometheusRegistry registry) throws Exception {
        try (HTTPServer server = HTTPServer.builder().inetAddress(InetAddress.getLoopbackAddress()).port(0)
                .registry(registry).buildAndStart()) {
            return MetricsScrape.of(URI.create("http://127.0.0.1:" + server.getPort() + "/metrics"));
        }
    }

    private static AgentCounters counters(long gets) {
        return new AgentCounters(gets, 2, 3, 4096, 1, 7, 1 << 20, 1 << 18, 65536, 5, 9, 11, 12, 13, 14, 15, 16, 17,
                new AgentCounters.DirectoryPrefetch(2, 1, 7, 3, 6, 1), new AgentCounters.SharedTier(21, 22, 23, 24, 25, 26, 27, 28, 29, 30),
                new AgentCounters.Uploads(8 << 20, 1, 2, 3, 1, 65536));
    }

    @Test
    void aMountExposesWhatItServedErrorsByErrnoAndItsAgentSide() throws Exception {
        ShimMetrics shim = new ShimMetrics();
        shim.served(1000);
        shim.served(24);
        shim.hit();
        shim.miss();
        shim.error(Errno.EIO);
        shim.error(Errno.EIO);
        shim.error(Errno.ETIMEDOUT);
        shim.inFlight(1);
        shim.openFiles(1);
        shim.openFiles(1);
        shim.spliced(512);
        AtomicReference<AgentCounters> agent = new AtomicReference<>(counters(10));
        Histogram gets = PrometheusMetrics.getSeconds();
        gets.observe(0.004);
        gets.observe(0.3);
        PrometheusRegistry registry = PrometheusMetrics.forMount(shim, agent::get, gets);

        MetricsScrape s = scrape(registry);
        assertEquals(1024, s.value("os2g_bytes_served_total"));
        assertEquals(2, s.value("os2g_reads_total"));
        assertEquals(1, s.value("os2g_staging_hits_total"));
        assertEquals(1, s.value("os2g_staging_misses_total"));
        assertEquals(2, s.value("os2g_errors_total{errno=\"EIO\"}"));
        assertEquals(1, s.value("os2g_errors_total{errno=\"ETIMEDOUT\"}"));
        assertEquals(1, s.value("os2g_reads_in_flight"));
        assertEquals(2, s.value("os2g_open_files"));
        assertEquals(512, s.value("os2g_bytes_spliced_total"));
        assertEquals(10, s.value("os2g_gets_total"));
        assertEquals(2, s.value("os2g_gets_in_flight"));
        assertEquals(3, s.value("os2g_get_retries_total"));
        assertEquals(1 << 20, s.value("os2g_staging_capacity_bytes"));
        assertEquals((1 << 20) - (1 << 18), s.value("os2g_staging_used_bytes"));
        assertEquals(9, s.value("os2g_staging_evictions_total"));
        assertEquals(2, s.value("os2g_prefetch_passes_total"));
        assertEquals(1, s.value("os2g_prefetch_sweeps_total"));
        assertEquals(3, s.value("os2g_prefetch_kept_files_total"));
        assertEquals(6, s.value("os2g_prefetched_files_opened_total"));
        assertEquals(1, s.value("os2g_prefetched_files_dropped_total"));
        assertEquals(8 << 20, s.value("os2g_uploaded_bytes_total"));
        assertEquals(1, s.value("os2g_uploaded_parts_total"));
        assertEquals(2, s.value("os2g_published_files_total"));
        assertEquals(3, s.value("os2g_aborted_uploads_total"));
        assertEquals(1, s.value("os2g_files_writing"));
        assertEquals(65536, s.value("os2g_staging_upload_bytes"));
        assertEquals(0, s.value("os2g_bytes_written_total"));
        assertEquals("histogram", s.types().get("os2g_get_seconds"));
        assertEquals(2, s.value("os2g_get_seconds_count"));
        assertEquals(1, s.value("os2g_get_seconds_bucket{le=\"0.005\"}"));
        assertEquals(2, s.value("os2g_get_seconds_bucket{le=\"+Inf\"}"));
        assertEquals("counter", s.types().get("os2g_bytes_served_total"));
        assertEquals("gauge", s.types().get("os2g_staging_used_bytes"));
        assertTrue(s.value("process_cpu_seconds_total") > 0);

        // values are read when scraped, not when registered
        agent.set(counters(11));
        shim.served(1);
        MetricsScrape later = scrape(registry);
        assertEquals(11, later.value("os2g_gets_total"));
        assertEquals(1025, later.value("os2g_bytes_served_total"));
    }

    @Test
    void aShimInSplitModeExposesOnlyItsOwnSide() throws Exception {
        MetricsScrape s = scrape(PrometheusMetrics.forMount(new ShimMetrics(), null, null));
        assertEquals(0, s.value("os2g_bytes_served_total"));
        assertFalse(s.samples().keySet().stream().anyMatch(k -> k.startsWith("os2g_gets")), "GETs are the agent's to expose");
    }

    @Test
    void anAgentLabelsEachMountItServes() throws Exception {
        List<PrometheusMetrics.ServedMount> mounts = new ArrayList<>(List.of(
                new PrometheusMetrics.ServedMount("mount-1", "data/", counters(4)),
                new PrometheusMetrics.ServedMount("mount-2", "data/train/", counters(6))));
        Histogram gets = PrometheusMetrics.getSeconds("mount", "source");
        gets.labelValues("mount-1", "data/").observe(0.02);
        PrometheusRegistry registry = PrometheusMetrics.forAgent(() -> mounts, gets);

        MetricsScrape s = scrape(registry);
        assertEquals(4, s.value("os2g_gets_total{mount=\"mount-1\",source=\"data/\"}"));
        assertEquals(6, s.value("os2g_gets_total{mount=\"mount-2\",source=\"data/train/\"}"));
        assertEquals(1, s.value("os2g_get_seconds_count{mount=\"mount-1\",source=\"data/\"}"));

        mounts.removeFirst(); // that shim went away
        MetricsScrape after = scrape(registry);
        assertFalse(after.samples().containsKey("os2g_gets_total{mount=\"mount-1\",source=\"data/\"}"));
        assertEquals(6, after.value("os2g_gets_total{mount=\"mount-2\",source=\"data/train/\"}"));
    }
}
