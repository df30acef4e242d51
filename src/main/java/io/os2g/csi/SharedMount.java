package io.os2g.csi;

import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Properties;

/**
 * One mount process of the node and what the plugin needs to find it again after a restart: where it
 * is mounted (the pods' targets are binds of it), its pid, its staging dir and its credentials file
 * (null when unsigned). Kept as {@value #FILE} in the mount's state dir.
 */
record SharedMount(String key, String volumeId, Path mountPoint, long pid, String device, boolean writable,
                   Path stagingDir, Path credentials) {

    static final String FILE = "mount.properties";

    /** The mount's own directory in the plugin's state dir: the mount point and the log lie in it. */
    Path stateDir() {
        return mountPoint.getParent();
    }

    void save() throws IOException {
        Properties p = new Properties();
        p.setProperty("key", key);
        p.setProperty("volume_id", volumeId);
        p.setProperty("mount_point", mountPoint.toString());
        p.setProperty("pid", Long.toString(pid));
        p.setProperty("device", device);
        p.setProperty("writable", Boolean.toString(writable));
        p.setProperty("staging_dir", stagingDir.toString());
        if (credentials != null) {
            p.setProperty("credentials", credentials.toString());
        }
        Path temporary = stateDir().resolve(FILE + ".new");
        try (Writer out = Files.newBufferedWriter(temporary, StandardCharsets.UTF_8)) {
            p.store(out, "an os2g mount made by the CSI node plugin");
        }
        Files.move(temporary, stateDir().resolve(FILE), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /** The mount recorded in {@code stateDir}, or null if there is none readable. */
    static SharedMount load(Path stateDir) {
        Properties p = new Properties();
        try (Reader in = Files.newBufferedReader(stateDir.resolve(FILE), StandardCharsets.UTF_8)) {
            p.load(in);
            String credentials = p.getProperty("credentials");
            return new SharedMount(p.getProperty("key"), p.getProperty("volume_id"), Path.of(p.getProperty("mount_point")),
                    Long.parseLong(p.getProperty("pid")), p.getProperty("device"), Boolean.parseBoolean(p.getProperty("writable")),
                    Path.of(p.getProperty("staging_dir")), credentials == null ? null : Path.of(credentials));
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
