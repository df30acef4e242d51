package io.os2g.store;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Proxy;
import java.net.ProxySelector;
import java.net.SocketAddress;
import java.net.URI;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The proxy conventions of curl and the AWS CLI: {@code HTTPS_PROXY} for https endpoints and {@code
 * HTTP_PROXY} for http ones (either case, {@code http://host:port} or {@code host:port}), bypassed for
 * the hosts of {@code NO_PROXY} (names, {@code .domain} suffixes, addresses, {@code *}). Without those
 * variables, the JVM's own settings ({@code -Dhttp.proxyHost} ...) apply.
 */
final class ProxySettings extends ProxySelector {

    private final Proxy http;
    private final Proxy https;
    private final List<String> noProxy;

    private ProxySettings(Proxy http, Proxy https, List<String> noProxy) {
        this.http = http;
        this.https = https;
        this.noProxy = noProxy;
    }

    /** The selector for this process's environment. */
    static ProxySelector fromEnvironment() {
        return of(System.getenv());
    }

    /** The selector {@code env} describes, or one asking the JVM's (as it is at each request) when it names no proxy. */
    static ProxySelector of(Map<String, String> env) {
        Proxy http = proxy(first(env, "http_proxy", "HTTP_PROXY"));
        Proxy https = proxy(first(env, "https_proxy", "HTTPS_PROXY"));
        if (http == null && https == null) {
            return new ProxySelector() {
                @Override
                public List<Proxy> select(URI uri) {
                    ProxySelector jvm = ProxySelector.getDefault();
                    return jvm == null ? List.of(Proxy.NO_PROXY) : jvm.select(uri);
                }

                @Override
                public void connectFailed(URI uri, SocketAddress address, IOException e) {
                    // as below
                }
            };
        }
        String bypass = first(env, "no_proxy", "NO_PROXY");
        List<String> noProxy = bypass == null ? List.of()
                : List.of(bypass.toLowerCase(Locale.ROOT).split("\\s*,\\s*")).stream().filter(s -> !s.isBlank()).toList();
        return new ProxySettings(http, https, noProxy);
    }

    @Override
    public List<Proxy> select(URI uri) {
        String host = uri.getHost() == null ? "" : uri.getHost().toLowerCase(Locale.ROOT).replaceAll("^\\[(.*)]$", "$1");
        Proxy proxy = "https".equalsIgnoreCase(uri.getScheme()) ? https : http;
        return proxy == null || bypassed(host) ? List.of(Proxy.NO_PROXY) : List.of(proxy);
    }

    private boolean bypassed(String host) {
        for (String entry : noProxy) {
            String e = entry.replaceAll("^\\[(.*)]$", "$1");
            int colon = e.lastIndexOf(':');
            if (colon > 0 && e.indexOf(':') == colon) {
                e = e.substring(0, colon); // host:port: the port is not compared
            }
            if (e.equals("*") || host.equals(e) || (e.startsWith(".") ? host.endsWith(e) : host.endsWith("." + e))) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void connectFailed(URI uri, SocketAddress address, IOException e) {
        // nothing to learn: the request fails and is retried like any other
    }

    private static String first(Map<String, String> env, String lower, String upper) {
        String v = env.get(lower);
        if (v == null || v.isBlank()) {
            v = env.get(upper);
        }
        return v == null || v.isBlank() ? null : v.strip();
    }

    /** {@code http://host:port} or {@code host:port} as an HTTP proxy (port 80 by default for http://, 1080 for none). */
    private static Proxy proxy(String value) {
        if (value == null) {
            return null;
        }
        URI uri = URI.create(value.contains("://") ? value : "http://" + value);
        if (uri.getHost() == null) {
            throw new StoreException(StoreException.Kind.PROTOCOL, "proxy setting is not a URL: " + value, null);
        }
        int port = uri.getPort() > 0 ? uri.getPort() : "https".equals(uri.getScheme()) ? 443 : 80;
        return new Proxy(Proxy.Type.HTTP, InetSocketAddress.createUnresolved(uri.getHost(), port));
    }
}
