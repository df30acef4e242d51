package io.os2g.support;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One scrape of a Prometheus endpoint, as Prometheus reads it: the text format's samples by their
 * series ({@code name{label="value",...}}, labels as written), and each metric family's TYPE.
 */
public record MetricsScrape(Map<String, Double> samples, Map<String, String> types) {

    public static MetricsScrape of(URI metrics) throws IOException, InterruptedException {
        try (HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build()) {
            HttpResponse<String> response = http.send(HttpRequest.newBuilder(metrics).timeout(Duration.ofSeconds(10)).build(),
                    HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200) {
                throw new IOException("scrape of " + metrics + ": HTTP " + response.statusCode());
            }
            if (!response.headers().firstValue("Content-Type").orElse("").startsWith("text/plain")) {
                throw new IOException("scrape of " + metrics + ": not the text format: " + response.headers().firstValue("Content-Type"));
            }
            return parse(response.body());
        }
    }

    static MetricsScrape parse(String text) {
        Map<String, Double> samples = new LinkedHashMap<>();
        Map<String, String> types = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            if (line.startsWith("# TYPE ")) {
                String[] words = line.split(" ");
                types.put(words[2], words[3]);
            } else if (!line.isBlank() && !line.startsWith("#")) {
                int space = line.lastIndexOf(' ');
                String value = line.substring(space + 1);
                samples.put(line.substring(0, space), value.equals("+Inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(value));
            }
        }
        return new MetricsScrape(samples, types);
    }

    /** The value of {@code series}; fails when the scrape has no such sample. */
    public double value(String series) {
        Double v = samples.get(series);
        if (v == null) {
            throw new AssertionError("no sample " + series + " in the scrape; it has " + samples.keySet());
        }
        return v;
    }
}
