package io.os2g.namespace;

import io.os2g.LogText;
import io.os2g.store.Listing;
import io.os2g.store.ObjectSummary;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns one listing level into a {@link Directory}: the namespace rules live here and nowhere else.
 *
 * <ul>
 *   <li>common prefixes become directories; a marker object equal to the listed prefix is the
 *       directory itself and is not an entry;
 *   <li>a name that is not a valid {@link EntryName} is skipped and logged once;
 *   <li>a key {@code a} beside a prefix {@code a/}: the directory wins, the file is hidden and logged
 *       once (mountpoint-s3 and gcsfuse make the same choice: the subtree holds more data).
 * </ul>
 */
public final class DirectoryBuilder {

    private static final Logger LOG = LoggerFactory.getLogger(DirectoryBuilder.class);

    /** Past this many distinct warnings, stop remembering (and logging) new ones: memory stays bounded. */
    private static final int MAX_REMEMBERED_WARNINGS = 10_000;

    private final InodeTable inodes;
    private final Set<String> warned = ConcurrentHashMap.newKeySet();

    public DirectoryBuilder(InodeTable inodes) {
        this.inodes = inodes;
    }

    public Directory build(Node.Dir self, Listing listing) {
        String prefix = self.prefix();
        TreeMap<String, Node> entries = new TreeMap<>();
        for (String common : listing.commonPrefixes()) {
            if (common.startsWith(prefix) && common.length() > prefix.length() + 1 && common.endsWith("/")) {
                addDirectory(entries, common);
            } else {
                warnOnce(common, "skipping prefix " + quote(common) + ": not one level below " + quote(prefix));
            }
        }
        for (ObjectSummary object : listing.objects()) {
            if (!object.key().startsWith(prefix)) {
                warnOnce(object.key(), "skipping key " + quote(object.key()) + " outside the directory " + quote(prefix));
                continue;
            }
            String raw = object.key().substring(prefix.length());
            if (raw.isEmpty()) {
                continue; // the directory marker object itself
            }
            if (raw.indexOf('/') == raw.length() - 1) {
                // a marker object "name/" that the server listed as an object, not as a common prefix
                addDirectory(entries, object.key());
                continue;
            }
            Optional<EntryName> name = EntryName.parse(raw);
            if (name.isEmpty()) {
                warnOnce(object.key(), "skipping key " + quote(object.key()) + ": " + EntryName.problem(raw));
                continue;
            }
            if (entries.get(name.get().value()) instanceof Node.Dir) {
                warnOnce(object.key(), "key " + quote(object.key()) + " is hidden by the directory "
                        + quote(object.key() + "/") + " of the same name");
                continue;
            }
            entries.put(name.get().value(), new Node.File(inodes.inodeOf(object.key()), object.key(),
                    object.size(), object.etag(), object.lastModifiedMillis()));
        }
        return new Directory(self, entries);
    }

    /** Adds the directory for {@code common}, a full prefix ending in {@code /}, one level below the listing. */
    private void addDirectory(TreeMap<String, Node> entries, String common) {
        String raw = common.substring(0, common.length() - 1);
        raw = raw.substring(raw.lastIndexOf('/') + 1);
        Optional<EntryName> name = EntryName.parse(raw);
        if (name.isEmpty()) {
            warnOnce(common, "skipping prefix " + quote(common) + ": " + EntryName.problem(raw));
            return;
        }
        entries.put(name.get().value(), new Node.Dir(inodes.inodeOf(common), common));
    }

    private void warnOnce(String key, String message) {
        if (warned.size() < MAX_REMEMBERED_WARNINGS && warned.add(key)) {
            LOG.warn(message);
        }
    }

    /** Keys are shown escaped so that a NUL or newline in a key cannot forge log lines. */
    private static String quote(String key) {
        return LogText.quote(key);
    }
}
