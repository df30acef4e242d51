package io.os2g.csi;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Starts the os2g mount processes of a node, so that they outlive the plugin: here, in a session of
 * their own ({@link #local}); or in the mounter, a process of its own (a container that the plugin's
 * restart or upgrade leaves running) that the plugin hands each descriptor to ({@link MounterClient}).
 * Whoever reaps a mount process writes its exit status next to its log ({@link #exitFile}).
 */
public interface MountStarter {

    /** Starts {@code argv} with {@code env}, descriptor {@code device} as its fd 3, its output appended to {@code log}; its pid. */
    long start(List<String> argv, List<String> env, int device, Path log) throws IOException;

    /** Whether mount process {@code pid}, logging to {@code log}, has ended (false when this cannot tell). */
    boolean ended(long pid, Path log);

    /** Where a mount process's exit status is written once it is reaped. */
    static Path exitFile(Path log) {
        return log.resolveSibling(log.getFileName() + ".exit");
    }

    /** Records the exit status of the mount process logging to {@code log}, for whoever looks next. */
    static void writeExit(Path log, int status) {
        try {
            Files.writeString(exitFile(log), Integer.toString(status), StandardCharsets.US_ASCII);
        } catch (IOException ignored) {
            // the directory went with its mount
        }
    }

    /** The exit status recorded for the mount process logging to {@code log}; -1 if none is (yet, or readable). */
    static int exitStatus(Path log) {
        try {
            return Integer.parseInt(Files.readString(exitFile(log), StandardCharsets.US_ASCII).strip());
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
    }

    /** Mount processes started by this process in sessions of their own (no container around the plugin). */
    static MountStarter local() {
        return new LocalStarter();
    }
}
