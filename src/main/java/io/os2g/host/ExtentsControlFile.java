package io.os2g.host;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.os2g.Errno;
import io.os2g.ErrnoException;
import io.os2g.link.AgentLink;
import io.os2g.link.OpenRequest;
import io.os2g.namespace.Namespace;
import io.os2g.namespace.Node;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One open {@code /.os2g/extents}: each path written to it (one per line) is staged whole and leased,
 * and reading the file from offset 0 returns one JSON line per path written so far, in order: the
 * lease's extents with {@code "path"}, or {@code "path"} with {@code "error"} (an errno name) and
 * {@code "message"}. Every lease lasts until the file is closed. This is the query for files whose
 * extents do not fit in an extended attribute, and for many files at once.
 */
final class ExtentsControlFile {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int MAX_LINE = 4096;

    private final Namespace namespace;
    private final AgentLink link;
    private final StagedReader reader;
    private final String mountPoint;
    private final ByteArrayOutputStream line = new ByteArrayOutputStream();
    private final ByteArrayOutputStream answers = new ByteArrayOutputStream();
    private final List<ExtentLease> leases = new ArrayList<>();
    private final List<Long> agentHandles = new ArrayList<>();

    ExtentsControlFile(Namespace namespace, AgentLink link, StagedReader reader, String mountPoint) {
        this.namespace = namespace;
        this.link = link;
        this.reader = reader;
        this.mountPoint = mountPoint;
    }

    /** Takes the bytes of one write(2); answers each complete line before it returns. */
    synchronized void write(ByteBuffer bytes) {
        while (bytes.hasRemaining()) {
            byte b = bytes.get();
            if (b == '\n') {
                answer(line.toString(StandardCharsets.UTF_8).strip());
                line.reset();
            } else if (line.size() <= MAX_LINE) {
                line.write(b);
            }
        }
    }

    synchronized byte[] read(long offset, long size) {
        byte[] all = answers.toByteArray();
        int from = (int) Math.min(offset, all.length);
        return java.util.Arrays.copyOfRange(all, from, (int) Math.min(all.length, from + size));
    }

    /** Ends every lease taken through this file. */
    synchronized void close() {
        leases.forEach(ExtentLease::close);
        agentHandles.forEach(link::release);
        leases.clear();
        agentHandles.clear();
    }

    private void answer(String text) {
        if (text.isEmpty()) {
            return;
        }
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("path", text);
        String lease = null;
        try {
            if (text.length() > MAX_LINE) {
                throw new IllegalArgumentException("longer than " + MAX_LINE + " bytes");
            }
            if (!(namespace.resolve(HintWriter.mountPath(text, mountPoint)) instanceof Node.File file)) {
                throw new IllegalArgumentException("a directory");
            }
            OpenHandle handle = new OpenHandle(file, link.open(OpenRequest.of(file)));
            agentHandles.add(handle.agentHandle());
            ExtentLease taken = reader.lease(handle);
            leases.add(taken);
            lease = taken.json();
        } catch (IllegalArgumentException e) {
            doc.put("error", Errno.name(Errno.EINVAL));
            doc.put("message", e.getMessage());
        } catch (ErrnoException e) {
            doc.put("error", Errno.name(e.errno()));
            doc.put("message", e.getMessage());
        }
        try {
            String json = JSON.writeValueAsString(doc);
            if (lease != null) {
                json = json.substring(0, json.length() - 1) + "," + lease.substring(1);
            }
            answers.writeBytes((json + "\n").getBytes(StandardCharsets.UTF_8));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
