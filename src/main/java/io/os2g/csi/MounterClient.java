package io.os2g.csi;

import com.fasterxml.jackson.databind.JsonNode;
import io.os2g.fuse.DeviceHandoff;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Mount processes started by the mounter ({@link Mounter}) at {@code socket}: the plugin's side. */
public final class MounterClient implements MountStarter {

    private final Path socket;

    public MounterClient(Path socket) {
        this.socket = socket;
    }

    @Override
    public long start(List<String> argv, List<String> env, int device, Path log) throws IOException {
        try (SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            channel.connect(UnixDomainSocketAddress.of(socket));
            BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(channel), StandardCharsets.UTF_8));
            OutputStream out = Channels.newOutputStream(channel);
            Mounter.write(out, Mounter.JSON.valueToTree(new Mounter.Start(argv, env, log.toString())));
            JsonNode handoff = answer(in);
            DeviceHandoff.send(device, Path.of(handoff.get("handoff").asText()));
            Mounter.write(out, Mounter.JSON.createObjectNode());
            JsonNode started = answer(in);
            if (started.has("error")) {
                throw new IOException("the mounter could not start the mount: " + started.get("error").asText());
            }
            return started.get("pid").asLong();
        } catch (IOException e) {
            throw new IOException("mounter at " + socket + ": " + e.getMessage(), e);
        }
    }

    private static JsonNode answer(BufferedReader in) throws IOException {
        String line = in.readLine();
        if (line == null) {
            throw new IOException("the mounter hung up");
        }
        return Mounter.JSON.readTree(line);
    }

    /** The mounter writes the exit status when it reaps the process; its pid is not this process's to see. */
    @Override
    public boolean ended(long pid, Path log) {
        return Files.exists(MountStarter.exitFile(log));
    }
}
