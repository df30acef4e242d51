package io.os2g.namespace;

import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * One path component that is safe to show in a directory: not empty, not {@code .} or {@code ..}, no
 * {@code /} or NUL, at most 255 bytes of UTF-8 (NAME_MAX). Only {@link #parse} creates one, so code
 * that holds an {@code EntryName} cannot see an invalid name.
 */
public record EntryName(String value) implements Comparable<EntryName> {

    /** Linux NAME_MAX: longer names cannot be looked up through the kernel. */
    public static final int NAME_MAX = 255;

    public EntryName {
        String problem = problem(value);
        if (problem != null) {
            throw new IllegalArgumentException("invalid name: " + problem + ": name=" + value);
        }
    }

    /** The name, or empty when {@code raw} is not a valid POSIX name. */
    public static Optional<EntryName> parse(String raw) {
        return problem(raw) == null ? Optional.of(new EntryName(raw)) : Optional.empty();
    }

    /** Why {@code raw} is not a valid name, or null when it is. */
    static String problem(String raw) {
        if (raw == null || raw.isEmpty()) {
            return "empty path segment";
        }
        if (raw.equals(".") || raw.equals("..")) {
            return "dot segment";
        }
        if (raw.indexOf('/') >= 0) {
            return "contains /";
        }
        if (raw.indexOf('\0') >= 0) {
            return "contains NUL";
        }
        if (raw.getBytes(StandardCharsets.UTF_8).length > NAME_MAX) {
            return "longer than " + NAME_MAX + " bytes";
        }
        return null;
    }

    @Override
    public int compareTo(EntryName other) {
        return value.compareTo(other.value);
    }

    @Override
    public String toString() {
        return value;
    }
}
