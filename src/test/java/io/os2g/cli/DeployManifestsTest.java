package io.os2g.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
import io.os2g.csi.CsiServer;
import io.os2g.csi.MountFlags;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The Helm chart and the manifests, checked as a cluster would take them, without one: Helm itself lints
 * and renders the chart; every object parses; the names one part gives (the driver, sockets, paths,
 * volumes, images) are the ones the others use; the os2g command lines in them are ones os2g accepts; the
 * plain manifests are the chart's default render; the examples' volumes are ones the plugin publishes.
 */
@Tag("unit")
class DeployManifestsTest {

    private static final Path CHART = Path.of("deploy/helm/os2g-csi");
    private static final Path MANIFEST = Path.of("deploy/kubernetes/os2g-csi.yaml");
    private static final Path EXAMPLES = Path.of("deploy/kubernetes/examples");
    private static final ObjectMapper YAML = new YAMLMapper();
    private static final String HEADER = "# Generated from deploy/helm/os2g-csi with its default values (namespace os2g):\n"
            + "#   mvn test -Dtest=DeployManifestsTest -Dos2g.deploy.write=true\n"
            + "# Install with kubectl create namespace os2g && kubectl apply -f deploy/kubernetes/os2g-csi.yaml\n";

    @TempDir
    Path tmp;

    private static String render(Map<String, String> values) {
        var template = new Helm(CHART).template().withName("os2g-csi").withNamespace("os2g");
        values.forEach(template::set);
        return template.call();
    }

    @Test
    void helmLintsTheChart() {
        LintResult lint = new Helm(CHART).lint().strict().call();
        assertFalse(lint.isFailed(), String.join("\n", lint.getMessages()));
    }

    @Test
    void thePlainManifestsAreTheChartsDefaultRender() throws IOException {
        String rendered = HEADER + render(Map.of());
        if (Boolean.getBoolean("os2g.deploy.write")) {
            Files.writeString(MANIFEST, rendered);
        }
        assertEquals(rendered, Files.readString(MANIFEST), "deploy/kubernetes/os2g-csi.yaml is stale: regenerate it (see its header)");
    }

    @Test
    void theDefaultRenderAgreesWithItself() throws IOException {
        Map<String, JsonNode> objects = objects(render(Map.of()));
        assertEquals(Set.of("CSIDriver/csi.os2g.io", "ServiceAccount/os2g-csi-node", "DaemonSet/os2g-csi-node",
                "DaemonSet/os2g-csi-mounter"), objects.keySet());
        JsonNode driver = objects.get("CSIDriver/csi.os2g.io");
        assertEquals(CsiServer.DRIVER_NAME, driver.at("/metadata/name").asText());
        assertFalse(driver.at("/spec/attachRequired").asBoolean(true), "no controller: nothing to attach");
        assertTrue(driver.at("/spec/tokenRequests").isMissingNode());
        checkNode(objects.get("DaemonSet/os2g-csi-node"), objects.get("DaemonSet/os2g-csi-mounter"), false);
    }

    @Test
    void withTheAgentEveryMountGoesThroughIt() throws IOException {
        Map<String, JsonNode> objects = objects(render(Map.of("agent.enabled", "true", "agent.endpoint", "http://minio:9000",
                "agent.credentialsSecret", "node-s3", "agent.sharedCache.url", "s3://os2g-cache/train",
                "agent.sharedCache.endpoint", "http://minio-cache:9000", "agent.sharedCache.keySecret", "cluster-key")));
        assertTrue(objects.get("CSIDriver/csi.os2g.io").at("/spec/tokenRequests").isMissingNode());
        JsonNode pod = objects.get("DaemonSet/os2g-csi-mounter").at("/spec/template/spec");
        checkNode(objects.get("DaemonSet/os2g-csi-node"), objects.get("DaemonSet/os2g-csi-mounter"), true);
        JsonNode agent = container(pod, "agent");
        assertEquals("node-s3", agent.at("/env/0/valueFrom/secretKeyRef/name").asText());
        assertTrue(args(agent).contains("--endpoint=http://minio:9000"));
        assertTrue(args(agent).containsAll(List.of("--shared-cache=s3://os2g-cache/train", "--shared-cache-endpoint=http://minio-cache:9000",
                "--shared-cache-key=/etc/os2g-shared-cache/key")));
        assertEquals("cluster-key", pod.at("/volumes").findParents("secret").stream().map(v -> v.at("/secret/secretName").asText())
                .filter("cluster-key"::equals).findFirst().orElse(""));
    }

    @Test
    void withARemoteAgentEveryMountReadsThroughItWithTheLinksCertificate() throws IOException {
        Map<String, JsonNode> objects = objects(render(Map.of("remoteAgent.address", "tcp://192.168.100.2:7070",
                "remoteAgent.linkSecret", "node-link")));
        JsonNode pod = objects.get("DaemonSet/os2g-csi-node").at("/spec/template/spec");
        JsonNode mounterPod = objects.get("DaemonSet/os2g-csi-mounter").at("/spec/template/spec");
        JsonNode plugin = container(pod, "os2g-csi");
        new CommandLine(new CsiCommand()).parseArgs(args(plugin).toArray(String[]::new));
        Map<String, String> pluginArgs = options(plugin);
        assertEquals("tcp://192.168.100.2:7070", pluginArgs.get("--agent"));
        String linkDir = mountPath(plugin, "link-tls");
        for (String file : List.of("--link-cert", "--link-key", "--link-ca")) {
            assertTrue(pluginArgs.get(file).startsWith(linkDir + "/"), file + " in the mounted Secret");
        }
        assertEquals(linkDir, mountPath(container(mounterPod, "mounter"), "link-tls"), "the mounts read the same files");
        assertEquals("node-link", volumes(pod).get("link-tls").at("/secret/secretName").asText());
        assertEquals("node-link", volumes(mounterPod).get("link-tls").at("/secret/secretName").asText());
        assertThrows(RuntimeException.class, () -> render(Map.of("remoteAgent.address", "tcp://192.168.100.2:7070")),
                "no Secret named");
        assertThrows(RuntimeException.class, () -> render(Map.of("remoteAgent.address", "tcp://192.168.100.2:7070",
                "remoteAgent.linkSecret", "node-link", "agent.enabled", "true")), "two agents");
    }

    @Test
    void withWebIdentityTheKubeletPassesEachPodsToken() throws IOException {
        JsonNode driver = objects(render(Map.of("webIdentity.audience", "sts.amazonaws.com"))).get("CSIDriver/csi.os2g.io");
        assertEquals("sts.amazonaws.com", driver.at("/spec/tokenRequests/0/audience").asText());
        assertTrue(driver.at("/spec/requiresRepublish").asBoolean(), "a fresh token before the last expires");
        assertTrue(driver.at("/spec/podInfoOnMount").asBoolean(), "the service account's name keys the mount");
    }

    /** The node's two pods: their containers' command lines, sockets, paths, volumes and images agree. */
    private void checkNode(JsonNode nodeSet, JsonNode mounterSet, boolean withAgent) throws IOException {
        assertEquals("RollingUpdate", nodeSet.at("/spec/updateStrategy/type").asText(), "the plugin's upgrades leave mounts serving");
        assertEquals("OnDelete", mounterSet.at("/spec/updateStrategy/type").asText(), "a new mounter ends the node's mounts");
        JsonNode pod = nodeSet.at("/spec/template/spec");
        JsonNode mounterPod = mounterSet.at("/spec/template/spec");
        for (JsonNode set : List.of(nodeSet, mounterSet)) {
            JsonNode labels = set.at("/spec/template/metadata/labels");
            set.at("/spec/selector/matchLabels").fields().forEachRemaining(e ->
                    assertEquals(e.getValue().asText(), labels.path(e.getKey()).asText(), set.at("/metadata/name") + " selects its own pods"));
        }
        Map<String, JsonNode> volumes = volumes(pod);
        Map<String, JsonNode> mounterVolumes = volumes(mounterPod);
        Set<String> names = new HashSet<>();
        for (JsonNode p : List.of(pod, mounterPod)) {
            Map<String, JsonNode> declared = volumes(p);
            for (JsonNode c : p.get("containers")) {
                names.add(c.get("name").asText());
                for (JsonNode m : c.path("volumeMounts")) {
                    assertTrue(declared.containsKey(m.get("name").asText()), c.get("name") + " mounts an undeclared volume " + m);
                }
            }
        }
        Set<String> expected = new HashSet<>(Set.of("os2g-csi", "mounter", "node-driver-registrar", "liveness-probe"));
        if (withAgent) {
            expected.add("agent");
        }
        assertEquals(expected, names);

        JsonNode values = YAML.readTree(CHART.resolve("values.yaml").toFile());
        String appVersion = YAML.readTree(CHART.resolve("Chart.yaml").toFile()).get("appVersion").asText();
        String image = values.at("/image/repository").asText() + ":" + appVersion;
        JsonNode plugin = container(pod, "os2g-csi");
        JsonNode mounter = container(mounterPod, "mounter");
        assertEquals(image, plugin.get("image").asText());
        assertEquals(image, mounter.get("image").asText());
        assertEquals(values.at("/sidecars/nodeDriverRegistrar/image").asText(), container(pod, "node-driver-registrar").get("image").asText());
        assertEquals(values.at("/sidecars/livenessProbe/image").asText(), container(pod, "liveness-probe").get("image").asText());

        // os2g accepts the command lines the manifests give it
        Map<String, String> pluginArgs = options(plugin);
        new CommandLine(new CsiCommand()).parseArgs(args(plugin).toArray(String[]::new));
        new CommandLine(new CsiMounterCommand()).parseArgs(args(mounter).toArray(String[]::new));
        assertEquals(List.of("/opt/os2g/os2g", "csi"), strings(plugin.get("command")));
        assertEquals(List.of("/opt/os2g/os2g", "csi-mounter"), strings(mounter.get("command")));

        // the plugin's socket: where the sidecars call it and where the kubelet is told it is
        Path socket = CsiServer.socketPath(pluginArgs.get("--endpoint"));
        assertEquals(Path.of("/csi/csi.sock"), socket);
        for (String sidecar : List.of("node-driver-registrar", "liveness-probe")) {
            assertTrue(args(container(pod, sidecar)).contains("--csi-address=" + socket), sidecar);
            assertEquals("/csi", mountPath(container(pod, sidecar), "plugin-dir"));
        }
        assertEquals("/csi", mountPath(plugin, "plugin-dir"));
        String kubeletDir = values.get("kubeletDir").asText();
        String pluginDir = volumes.get("plugin-dir").at("/hostPath/path").asText();
        assertEquals(kubeletDir + "/plugins/" + CsiServer.DRIVER_NAME, pluginDir);
        assertTrue(args(container(pod, "node-driver-registrar")).contains("--kubelet-registration-path=" + pluginDir + "/csi.sock"));
        assertEquals(kubeletDir + "/plugins_registry", volumes.get("registration-dir").at("/hostPath/path").asText());

        // binds into pods' targets reach the kubelet; the mounts they bind live in the state dir
        assertEquals(kubeletDir, mountPath(plugin, "kubelet-dir"));
        assertEquals("Bidirectional", mount(plugin, "kubelet-dir").get("mountPropagation").asText());
        String stateDir = pluginArgs.get("--state-dir");
        assertEquals(stateDir, volumes.get("state-dir").at("/hostPath/path").asText());
        assertEquals(stateDir, mountPath(plugin, "state-dir"));
        assertEquals("Bidirectional", mount(plugin, "state-dir").get("mountPropagation").asText());
        assertEquals(stateDir, mountPath(mounter, "state-dir"), "the mounter writes each mount's log in the state dir");
        assertEquals(stateDir, mounterVolumes.get("state-dir").at("/hostPath/path").asText());

        // sockets and credentials on the host's /run (tmpfs), shared by the two pods; staging where the mounter runs
        String runDir = values.get("runDir").asText();
        assertEquals(runDir, volumes.get("run-dir").at("/hostPath/path").asText());
        assertEquals(runDir, mounterVolumes.get("run-dir").at("/hostPath/path").asText());
        assertTrue(pluginArgs.get("--secrets-dir").startsWith(mountPath(plugin, "run-dir") + "/"));
        assertEquals(mountPath(plugin, "run-dir"), mountPath(mounter, "run-dir"));
        Path mounterSocket = CsiServer.socketPath(pluginArgs.get("--mounter"));
        assertEquals(mounterSocket, CsiServer.socketPath(options(mounter).get("--listen")));
        assertTrue(mounterSocket.startsWith(mountPath(mounter, "run-dir")));
        assertEquals("Memory", mounterVolumes.get("staging").at("/emptyDir/medium").asText());
        assertTrue(pluginArgs.get("--staging-dir").startsWith(mountPath(mounter, "staging") + "/"));
        assertEquals("/dev/fuse", volumes.get("dev-fuse").at("/hostPath/path").asText());
        assertTrue(plugin.at("/securityContext/privileged").asBoolean());

        // the liveness probe asks the sidecar, which asks the plugin's Probe
        String healthPort = args(container(pod, "liveness-probe")).stream().filter(a -> a.startsWith("--health-port="))
                .findFirst().orElseThrow().substring("--health-port=".length());
        assertEquals(healthPort, plugin.at("/ports/0/containerPort").asText());
        assertEquals(plugin.at("/ports/0/name").asText(), plugin.at("/livenessProbe/httpGet/port").asText());

        if (withAgent) {
            JsonNode agent = container(mounterPod, "agent");
            assertEquals(image, agent.get("image").asText());
            new CommandLine(new AgentCommand()).parseArgs(args(agent).toArray(String[]::new));
            assertEquals(pluginArgs.get("--agent"), options(agent).get("--listen"), "the plugin's mounts dial where the agent listens");
            assertTrue(options(agent).get("--staging-dir").startsWith(mountPath(agent, "staging") + "/"),
                    "the agent's regions where the mounts (in the mounter) attach to them");
            assertEquals(mountPath(mounter, "staging"), mountPath(agent, "staging"));
        } else {
            assertFalse(pluginArgs.containsKey("--agent"));
        }
    }

    @Test
    void theExamplesVolumesAreOnesThePluginPublishes() throws Exception {
        VolumeAttributes attributes = new VolumeAttributes(tmp);
        int volumes = 0;
        List<Path> files;
        try (Stream<Path> list = Files.list(EXAMPLES)) {
            files = list.filter(p -> p.toString().endsWith(".yaml")).sorted().toList();
        }
        assertEquals(2, files.size(), files.toString());
        for (Path file : files) {
            Map<String, JsonNode> objects = objects(Files.readString(file));
            Map<String, JsonNode> secrets = new HashMap<>();
            objects.forEach((k, v) -> {
                if (k.startsWith("Secret/")) {
                    secrets.put(v.at("/metadata/name").asText(), v);
                }
            });
            for (JsonNode secret : secrets.values()) {
                List<String> keys = new ArrayList<>();
                secret.get("stringData").fieldNames().forEachRemaining(keys::add);
                assertEquals(List.of("access_key_id", "secret_access_key"), keys, file + ": the keys os2g reads");
            }
            List<JsonNode> csi = new ArrayList<>();
            Map<JsonNode, List<String>> mountOptions = new HashMap<>();
            objects.forEach((k, v) -> {
                if (k.startsWith("PersistentVolume/")) {
                    csi.add(v.at("/spec/csi"));
                    List<String> flags = new ArrayList<>();
                    v.at("/spec/mountOptions").forEach(o -> flags.add(o.asText()));
                    mountOptions.put(v.at("/spec/csi"), flags);
                }
                if (k.startsWith("Pod/")) {
                    v.at("/spec/volumes").forEach(vol -> {
                        if (vol.has("csi")) {
                            csi.add(vol.get("csi"));
                        }
                    });
                }
            });
            for (JsonNode volume : csi) {
                volumes++;
                assertEquals(CsiServer.DRIVER_NAME, volume.get("driver").asText(), file.toString());
                assertTrue(secrets.containsKey(volume.at("/nodePublishSecretRef/name").asText()), file + ": the secret it names");
                Map<String, String> given = new HashMap<>();
                volume.get("volumeAttributes").fields().forEachRemaining(e -> given.put(e.getKey(), e.getValue().asText()));
                MountFlags flags = MountFlags.parse(mountOptions.getOrDefault(volume, List.of()));
                assertFalse(attributes.of(given, flags.options()).isEmpty(), file.toString()); // throws naming a bad attribute
            }
            objects.forEach((k, v) -> {
                if (k.startsWith("PersistentVolumeClaim/")) {
                    assertNotNull(objects.get("PersistentVolume/" + v.at("/spec/volumeName").asText()), file + ": the claim's volume");
                }
                if (k.startsWith("Job/")) {
                    String claim = v.at("/spec/template/spec/volumes/0/persistentVolumeClaim/claimName").asText();
                    assertNotNull(objects.get("PersistentVolumeClaim/" + claim), file + ": the Job's claim");
                }
            });
        }
        assertEquals(2, volumes);
    }

    /** The objects of a multi-document YAML text by kind/name; each must parse and have both. */
    private static Map<String, JsonNode> objects(String yaml) throws IOException {
        Map<String, JsonNode> objects = new HashMap<>();
        try (var parser = new YAMLFactory().createParser(yaml)) {
            for (var it = YAML.readValues(parser, JsonNode.class); it.hasNext(); ) {
                JsonNode o = it.next();
                if (o == null || o.isEmpty()) {
                    continue;
                }
                String key = o.get("kind").asText() + "/" + o.at("/metadata/name").asText();
                assertFalse(objects.containsKey(key), "twice: " + key);
                assertFalse(o.at("/apiVersion").isMissingNode(), key);
                objects.put(key, o);
            }
        }
        return objects;
    }

    private static Map<String, JsonNode> volumes(JsonNode pod) {
        Map<String, JsonNode> volumes = new HashMap<>();
        pod.get("volumes").forEach(v -> volumes.put(v.get("name").asText(), v));
        return volumes;
    }

    private static JsonNode container(JsonNode pod, String name) {
        for (JsonNode c : pod.get("containers")) {
            if (c.get("name").asText().equals(name)) {
                return c;
            }
        }
        throw new AssertionError("no container " + name);
    }

    private static List<String> args(JsonNode container) {
        return strings(container.get("args"));
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asText()));
        return out;
    }

    /** {@code --name=value} arguments as a map. */
    private static Map<String, String> options(JsonNode container) {
        Map<String, String> options = new HashMap<>();
        for (String a : args(container)) {
            int eq = a.indexOf('=');
            options.put(eq < 0 ? a : a.substring(0, eq), eq < 0 ? "" : a.substring(eq + 1));
        }
        return options;
    }

    private static JsonNode mount(JsonNode container, String volume) {
        for (JsonNode m : container.path("volumeMounts")) {
            if (m.get("name").asText().equals(volume)) {
                return m;
            }
        }
        return MissingNode.getInstance();
    }

    private static String mountPath(JsonNode container, String volume) {
        JsonNode m = mount(container, volume);
        assertFalse(m.isMissingNode(), container.get("name") + " does not mount " + volume);
        return m.get("mountPath").asText();
    }
}
