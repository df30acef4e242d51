package io.os2g.host;

import io.os2g.ErrnoException;
import io.os2g.LogText;
import io.os2g.link.AgentLink;
import io.os2g.link.OpenRequest;
import io.os2g.link.PrefetchRequest;
import io.os2g.metrics.ShimMetrics;
import io.os2g.namespace.Namespace;
import io.os2g.namespace.Node;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One open handle of {@code /.os2g/prefetch} or {@code /.os2g/warm}: the bytes written are paths, one
 * per line, in the order they will be read. Each complete line is checked and resolved through the
 * namespace as it arrives, and the files go to the agent in batches, so staging starts while a long
 * list is still being written. A line is a path relative to the mount, or an absolute path under the
 * mount point; a line that names nothing (missing, a directory, {@code ..}, longer than PATH_MAX,
 * a control file) is skipped and counted, never an error for the writer. Blank lines are ignored.
 */
final class HintWriter {

    private static final Logger LOG = LoggerFactory.getLogger(HintWriter.class);

    /** PATH_MAX: longer lines cannot name a file. */
    static final int MAX_LINE = 4096;
    /** Files per message to the agent. */
    private static final int BATCH = 256;

    private final Namespace namespace;
    private final AgentLink link;
    private final ShimMetrics metrics;
    private final String mountPoint;
    private final boolean warm;
    private final ByteArrayOutputStream line = new ByteArrayOutputStream();
    private final List<OpenRequest> batch = new ArrayList<>();
    private boolean overlong;
    /** Whether the next message replaces what was hinted before (the file was opened with O_TRUNC). */
    private boolean replace;
    private long rejected;
    private String firstRejection;

    HintWriter(Namespace namespace, AgentLink link, ShimMetrics metrics, String mountPoint, boolean warm, boolean replace) {
        this.namespace = namespace;
        this.link = link;
        this.metrics = metrics;
        this.mountPoint = mountPoint;
        this.warm = warm;
        this.replace = replace;
    }

    /**
     * Takes the bytes of one write(2).
     *
     * @throws ErrnoException EIO when the agent cannot be told
     */
    synchronized void write(ByteBuffer bytes) {
        while (bytes.hasRemaining()) {
            byte b = bytes.get();
            if (b == '\n') {
                endLine();
            } else if (line.size() < MAX_LINE) {
                line.write(b);
            } else {
                overlong = true;
            }
        }
        send(false);
    }

    /** The writer closed the file: its last line need not end in a newline. */
    synchronized void close() {
        if (line.size() > 0 || overlong) {
            endLine();
        }
        send(true);
        if (rejected > 0) {
            LOG.info("{}: skipped {} line(s) that name no file of the mount (first: {})",
                    warm ? ControlFiles.WARM : ControlFiles.PREFETCH, rejected, firstRejection);
        }
    }

    private void endLine() {
        String text = line.toString(StandardCharsets.UTF_8);
        boolean tooLong = overlong;
        line.reset();
        overlong = false;
        if (text.endsWith("\r")) {
            text = text.substring(0, text.length() - 1);
        }
        if (text.isBlank()) {
            return;
        }
        if (tooLong) {
            reject(text.substring(0, 64) + "...", "longer than " + MAX_LINE + " bytes");
            return;
        }
        String clean;
        try {
            clean = mountPath(text, mountPoint);
        } catch (IllegalArgumentException e) {
            reject(text, e.getMessage());
            return;
        }
        Node node;
        try {
            node = namespace.resolve(clean);
        } catch (RuntimeException e) {
            reject(text, e instanceof ErrnoException ? e.getMessage() : e.toString());
            return;
        }
        if (!(node instanceof Node.File file)) {
            reject(text, "a directory");
            return;
        }
        metrics.hintAccepted();
        batch.add(OpenRequest.of(file));
        if (batch.size() >= BATCH) {
            send(false);
        }
    }

    /**
     * A line written to a control file as a path of the mount ({@code /train/a.jpg}): relative to the
     * mount, or absolute under its mount point.
     *
     * @throws IllegalArgumentException with the reason, for {@code ..} or what names no file of the bucket
     */
    static String mountPath(String text, String mountPoint) {
        String path = text.startsWith(mountPoint + "/") ? text.substring(mountPoint.length()) : text;
        StringBuilder clean = new StringBuilder();
        for (String part : path.split("/")) {
            if (part.equals("..")) {
                throw new IllegalArgumentException("'..' is not allowed");
            }
            if (!part.isEmpty() && !part.equals(".")) {
                clean.append('/').append(part);
            }
        }
        if (clean.isEmpty() || ControlFiles.owns(clean.toString())) {
            throw new IllegalArgumentException("not a file of the bucket");
        }
        return clean.toString();
    }

    private void reject(String text, String reason) {
        metrics.hintRejected();
        if (rejected++ == 0) {
            firstRejection = LogText.quote(text) + ": " + LogText.escape(reason);
        }
        LOG.debug("hint {} skipped: {}", LogText.quote(text), LogText.escape(reason));
    }

    /** Sends the batch; at the end, an empty replacing message still clears the old hints. */
    private void send(boolean last) {
        if (batch.isEmpty() && !(last && replace)) {
            return;
        }
        link.prefetch(new PrefetchRequest(batch, replace, warm));
        replace = false;
        batch.clear();
    }
}
