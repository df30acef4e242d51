package io.os2g.codec;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.apache.commons.compress.archivers.tar.TarFile;

/**
 * Where the members of one tar lie: for each regular file its data offset and size, and the directory
 * tree the member paths make. Built from the member headers alone ({@link #fromHeaders}), or read from a
 * sidecar index object ({@link #readSidecar}, written by {@link #writeSidecar}; the format is in
 * docs/TAR.md).
 *
 * <p>Paths are normalised: leading {@code /} and {@code ./}, empty and {@code .} components dropped. A
 * member with a {@code ..} component, and every member that is neither a regular file nor a directory
 * (links, devices, FIFOs, sparse files), is skipped and counted. A later member of the same path replaces
 * an earlier one, as when the tar is extracted.
 */
public final class TarIndex {

    /** The first line of a sidecar index says this. */
    public static final String SIDECAR_FORMAT = "os2g-tar-index";
    public static final int SIDECAR_VERSION = 1;
    /** How many times a walk that met a corrupt header is retried, each time ending at an earlier header. */
    private static final int MAX_CUTS = 3;
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * One regular file of the tar.
     *
     * @param truncated its data runs past the end of the tar: reading it is an error
     */
    public record Member(String path, long dataOffset, long size, long mtimeMillis, boolean truncated) {
    }

    /** One directory of the tree: its files by name, and the names of its sub-directories. */
    public record Level(Map<String, Member> files, List<String> directories) {
    }

    private final Map<String, Member> files;
    private final Map<String, Level> levels;
    private final long skipped;
    private final String problem;

    private TarIndex(Map<String, Member> files, Map<String, Level> levels, long skipped, String problem) {
        this.files = files;
        this.levels = levels;
        this.skipped = skipped;
        this.problem = problem;
    }

    /** The regular file at {@code path} (normalised, no leading or trailing {@code /}), or null. */
    public Member file(String path) {
        return files.get(path);
    }

    /** The directory at {@code path} ({@code ""} for the top, else ending in {@code /}), or null. */
    public Level level(String path) {
        return levels.get(path);
    }

    public int fileCount() {
        return files.size();
    }

    /** Members that are not regular files or directories, or whose path climbs out with {@code ..}. */
    public long skipped() {
        return skipped;
    }

    /** Why the walk stopped before the end of the tar (a corrupt header), or null when it did not. */
    public String problem() {
        return problem;
    }

    /**
     * Walks the member headers of a tar of {@code size} bytes. A header that cannot be parsed ends the walk
     * there: the members before it are kept and {@link #problem()} says what went wrong; a member whose data
     * runs past the end is kept as {@link Member#truncated()}.
     */
    public static TarIndex fromHeaders(RangeSource source, long size) throws IOException {
        RangeChannel channel = new RangeChannel(source, size);
        try {
            return of(walk(channel), size, null);
        } catch (IOException | RuntimeException first) {
            rethrowSourceFailure(first);
            String problem = first.getMessage() == null ? first.toString() : first.getMessage();
            List<Long> headers = channel.headerPositions();
            // a shorter walk that ends just before the header that broke the first one
            for (int cut = 1; cut <= Math.min(MAX_CUTS, headers.size()); cut++) {
                try {
                    return of(walk(new RangeChannel(source, headers.get(headers.size() - cut))), size, problem);
                } catch (IOException | RuntimeException e) {
                    rethrowSourceFailure(e);
                    // the header before it is no better (a PAX record whose entry broke): one further back
                }
            }
            return of(List.of(), size, problem);
        }
    }

    /** A failed read of the object is not a corrupt tar: it must fail the walk, not shorten it. */
    private static void rethrowSourceFailure(Throwable failure) throws IOException {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof RangeChannel.SourceException source) {
                if (source.getCause() instanceof RuntimeException runtime) {
                    throw runtime;
                }
                throw (IOException) source.getCause();
            }
        }
    }

    private static List<TarEntryView> walk(RangeChannel channel) throws IOException {
        List<TarEntryView> entries = new ArrayList<>();
        try (TarFile tar = new TarFile(channel, TarConstants.DEFAULT_BLKSIZE, TarConstants.DEFAULT_RCDSIZE, null, true)) {
            for (TarArchiveEntry e : tar.getEntries()) {
                byte type = e.getLinkFlag();
                // isFile() is true for links and devices too: only these three type flags hold a file's bytes
                boolean regular = (type == TarConstants.LF_NORMAL || type == TarConstants.LF_OLDNORM
                        || type == TarConstants.LF_CONTIG) && !e.isSparse();
                entries.add(new TarEntryView(e.getName(), e.isDirectory(), regular,
                        e.getDataOffset(), e.getSize(), e.getLastModifiedTime().toMillis()));
            }
        }
        return entries;
    }

    /** The fields of a header the index keeps. */
    private record TarEntryView(String name, boolean directory, boolean regular, long dataOffset, long size,
                                long mtimeMillis) {
    }

    private static TarIndex of(List<TarEntryView> entries, long tarSize, String problem) {
        Builder builder = new Builder();
        for (TarEntryView e : entries) {
            String path = normalise(e.name());
            if (path == null || !(e.regular() || e.directory())) {
                builder.skipped++;
            } else if (e.directory()) {
                builder.directory(path);
            } else {
                builder.file(new Member(path, e.dataOffset(), e.size(), e.mtimeMillis(), e.dataOffset() + e.size() > tarSize));
            }
        }
        return builder.build(problem);
    }

    /** {@code name} without leading {@code /}, empty or {@code .} components; null if a component is {@code ..} or nothing is left. */
    static String normalise(String name) {
        List<String> parts = new ArrayList<>();
        for (String part : name.split("/")) {
            if (part.isEmpty() || part.equals(".")) {
                continue;
            }
            if (part.equals("..")) {
                return null;
            }
            parts.add(part);
        }
        return parts.isEmpty() ? null : String.join("/", parts);
    }

    /**
     * Writes the sidecar form: a first line naming the format, version, and the tar's size and ETag it
     * describes, then one JSON object per line for each file ({@code path}, {@code offset}, {@code size},
     * {@code mtime} in epoch milliseconds) and each directory ({@code dir}).
     */
    public void writeSidecar(OutputStream out, long tarSize, String tarEtag) throws IOException {
        StringBuilder text = new StringBuilder();
        ObjectNode head = JSON.createObjectNode()
                .put("format", SIDECAR_FORMAT).put("version", SIDECAR_VERSION)
                .put("tar_size", tarSize).put("tar_etag", tarEtag).put("files", files.size()).put("skipped", skipped);
        text.append(JSON.writeValueAsString(head)).append('\n');
        for (String dir : new TreeSet<>(levels.keySet())) {
            if (!dir.isEmpty()) {
                text.append(JSON.writeValueAsString(JSON.createObjectNode().put("dir", dir.substring(0, dir.length() - 1)))).append('\n');
            }
        }
        for (Member m : new TreeMap<>(files).values()) {
            text.append(JSON.writeValueAsString(JSON.createObjectNode().put("path", m.path())
                    .put("offset", m.dataOffset()).put("size", m.size()).put("mtime", m.mtimeMillis()))).append('\n');
        }
        out.write(text.toString().getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Reads a sidecar index, if it describes this tar: {@code tarSize} must match, and {@code tarEtag} too
     * when both sides have one. Throws {@link IOException} with the reason for any other content.
     */
    public static TarIndex readSidecar(InputStream in, long tarSize, String tarEtag) throws IOException {
        BufferedReader lines = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
        String first = lines.readLine();
        if (first == null) {
            throw new IOException("empty sidecar index");
        }
        JsonNode head = parse(first, 1);
        if (!SIDECAR_FORMAT.equals(head.path("format").asText()) || head.path("version").asInt() != SIDECAR_VERSION) {
            throw new IOException("not an " + SIDECAR_FORMAT + " version " + SIDECAR_VERSION + " file");
        }
        if (head.path("tar_size").asLong(-1) != tarSize) {
            throw new IOException("describes a tar of " + head.path("tar_size").asLong(-1) + " bytes, not " + tarSize + " (stale)");
        }
        String etag = head.path("tar_etag").asText("");
        if (!etag.isEmpty() && !tarEtag.isEmpty() && !etag.equals(tarEtag)) {
            throw new IOException("describes ETag " + etag + ", not " + tarEtag + " (stale)");
        }
        Builder builder = new Builder();
        builder.skipped = head.path("skipped").asLong(0);
        int number = 1;
        for (String line = lines.readLine(); line != null; line = lines.readLine()) {
            number++;
            if (line.isBlank()) {
                continue;
            }
            JsonNode node = parse(line, number);
            if (node.has("dir")) {
                String path = normalise(node.get("dir").asText());
                if (path == null) {
                    throw new IOException("line " + number + ": directory path " + node.get("dir") + " is not allowed");
                }
                builder.directory(path);
                continue;
            }
            String path = normalise(node.path("path").asText(""));
            long offset = node.path("offset").asLong(-1);
            long size = node.path("size").asLong(-1);
            if (path == null || offset < 0 || offset % TarConstants.DEFAULT_RCDSIZE != 0 || size < 0) {
                throw new IOException("line " + number + ": not a member (path, offset at a 512-byte record, size): " + line);
            }
            if (offset + size > tarSize) {
                throw new IOException("line " + number + ": member " + path + " ends past the tar's " + tarSize + " bytes");
            }
            builder.file(new Member(path, offset, size, node.path("mtime").asLong(0), false));
        }
        return builder.build(null);
    }

    private static JsonNode parse(String line, int number) throws IOException {
        try {
            JsonNode node = JSON.readTree(line);
            if (node == null || !node.isObject()) {
                throw new IOException("line " + number + " is not a JSON object");
            }
            return node;
        } catch (com.fasterxml.jackson.core.JacksonException e) {
            throw new IOException("line " + number + " is not JSON: " + e.getOriginalMessage());
        }
    }

    /** Collects files and directories into levels; parents of a path exist as soon as the path does. */
    private static final class Builder {
        private final Map<String, Member> files = new HashMap<>();
        private final Map<String, TreeMap<String, Member>> levelFiles = new HashMap<>();
        private final Map<String, TreeSet<String>> levelDirs = new HashMap<>();
        private long skipped;

        Builder() {
            levelFiles.put("", new TreeMap<>());
            levelDirs.put("", new TreeSet<>());
        }

        /** Adds the directory {@code path} (no trailing {@code /}) and its parents; returns its level key. */
        String directory(String path) {
            String parent = "";
            for (String name : path.split("/")) {
                String self = parent + name + "/";
                if (levelFiles.putIfAbsent(self, new TreeMap<>()) == null) {
                    levelDirs.put(self, new TreeSet<>());
                }
                levelDirs.get(parent).add(name);
                parent = self;
            }
            return parent;
        }

        void file(Member member) {
            int slash = member.path().lastIndexOf('/');
            String level = slash < 0 ? "" : directory(member.path().substring(0, slash));
            Member previous = files.put(member.path(), member);
            if (previous != null) {
                skipped++; // the earlier copy of a path that appears twice
            }
            levelFiles.get(level).put(member.path().substring(slash + 1), member);
        }

        TarIndex build(String problem) {
            Map<String, Level> levels = new HashMap<>();
            levelFiles.forEach((path, byName) -> levels.put(path, new Level(Collections.unmodifiableMap(byName),
                    List.copyOf(levelDirs.get(path)))));
            return new TarIndex(Map.copyOf(files), Map.copyOf(levels), skipped, problem);
        }
    }
}
