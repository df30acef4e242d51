package io.os2g.metrics;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.lang.management.ManagementFactory;
import java.util.Map;

/** The {@code /.os2g/stats} document: nested maps of counters, written as JSON. */
public final class Stats {

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final double GIB = 1024.0 * 1024 * 1024;

    private Stats() {
    }

    public static String json(Map<String, ?> document) {
        try {
            return JSON.writeValueAsString(document) + "\n";
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Parses a JSON object written by {@link #json} (an agent's part of the document). */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> parse(String json) {
        try {
            return JSON.readValue(json, Map.class);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("not a stats document: " + e.getOriginalMessage());
        }
    }

    /** CPU seconds this process has used, all threads. */
    public static double processCpuSeconds() {
        var os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
            return sun.getProcessCpuTime() / 1e9;
        }
        return Double.NaN;
    }

    /** CPU seconds per GiB served, or null before anything was served. */
    public static Double perGib(double cpuSeconds, long bytes) {
        return bytes <= 0 ? null : Math.round(cpuSeconds / (bytes / GIB) * 100) / 100.0;
    }
}
