package io.os2g.store;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.InetSocketAddress;
import java.net.Proxy;
import java.net.URI;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class ProxySettingsTest {

    private static String via(Map<String, String> env, String url) {
        Proxy p = ProxySettings.of(env).select(URI.create(url)).getFirst();
        return p.type() == Proxy.Type.DIRECT ? "direct" : ((InetSocketAddress) p.address()).getHostString() + ":" + ((InetSocketAddress) p.address()).getPort();
    }

    @Test
    void eachSchemeGoesThroughItsOwnVariableInEitherCase() {
        Map<String, String> env = Map.of("HTTP_PROXY", "http://proxy.corp:3128", "https_proxy", "secure.corp:8443");
        assertEquals("proxy.corp:3128", via(env, "http://minio:9000"));
        assertEquals("secure.corp:8443", via(env, "https://s3.amazonaws.com"));
        assertEquals("direct", via(Map.of("HTTPS_PROXY", "p:1"), "http://minio:9000"), "no proxy for http");
    }

    @Test
    void noProxyBypassesNamesDomainsAddressesAndEverything() {
        Map<String, String> env = Map.of("HTTP_PROXY", "p:3128", "NO_PROXY", "localhost, .internal,minio.lab:9000,10.1.2.3,::1");
        assertEquals("direct", via(env, "http://localhost:9000"));
        assertEquals("direct", via(env, "http://s3.storage.internal"));
        assertEquals("direct", via(env, "http://minio.lab:9000"));
        assertEquals("direct", via(env, "http://10.1.2.3:9000"));
        assertEquals("direct", via(env, "http://[::1]:9000"));
        assertEquals("p:3128", via(env, "http://minio.lab2:9000"));
        assertEquals("p:3128", via(env, "http://notinternal:9000"));
        assertEquals("direct", via(Map.of("HTTP_PROXY", "p:3128", "no_proxy", "*"), "http://anything"));
    }

    @Test
    void withoutTheVariablesTheJvmsSelectorIsAskedAtEachRequest() {
        java.net.ProxySelector before = java.net.ProxySelector.getDefault();
        java.net.ProxySelector settings = ProxySettings.of(Map.of());
        try {
            java.net.ProxySelector.setDefault(java.net.ProxySelector.of(new InetSocketAddress("jvm.proxy", 8080)));
            assertEquals(List.of(new Proxy(Proxy.Type.HTTP, new InetSocketAddress("jvm.proxy", 8080))), settings.select(URI.create("http://x")));
        } finally {
            java.net.ProxySelector.setDefault(before);
        }
    }
}
