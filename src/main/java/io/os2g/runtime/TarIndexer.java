package io.os2g.runtime;

import io.os2g.agent.StoreRangeSource;
import io.os2g.codec.TarIndex;
import io.os2g.store.MinioObjectStore;
import io.os2g.store.ObjectSummary;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * {@code os2g index}: reads a tar object's headers with ranged GETs and writes its sidecar index
 * ({@code KEY.tar.idx}, docs/TAR.md), so that {@code --expand-tar} lists it with one small GET.
 */
public final class TarIndexer {

    /**
     * @param sidecar the index's bytes; null where the tar is corrupt
     * @param problem what is wrong with a corrupt tar; null for a good one
     */
    public record Indexed(String key, long tarSize, int files, long skipped, byte[] sidecar, String problem) {
    }

    private TarIndexer() {
    }

    /**
     * Indexes {@code key} of the store's bucket; with {@code upload}, puts the sidecar beside the tar
     * (nothing is put for a corrupt tar).
     *
     * @throws UsageError no such object, or the store refusing
     */
    public static Indexed index(StoreSettings store, String bucket, String key, boolean upload) throws IOException {
        try (MinioObjectStore objects = Preflight.openStore(store.config(bucket))) {
            ObjectSummary tar = find(objects, key);
            TarIndex index = TarIndex.fromHeaders(StoreRangeSource.of(objects, key, tar.etag()), tar.size());
            if (index.problem() != null) {
                return new Indexed(key, tar.size(), index.fileCount(), index.skipped(), null, index.problem());
            }
            ByteArrayOutputStream text = new ByteArrayOutputStream();
            index.writeSidecar(text, tar.size(), tar.etag());
            if (upload) {
                objects.put(key + ".idx", text.toByteArray(), "application/x-ndjson");
            }
            return new Indexed(key, tar.size(), index.fileCount(), index.skipped(), text.toByteArray(), null);
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
    }

    private static ObjectSummary find(MinioObjectStore objects, String key) {
        String parent = key.substring(0, key.lastIndexOf('/') + 1);
        return objects.list(parent).objects().stream().filter(o -> o.key().equals(key)).findFirst()
                .orElseThrow(() -> new UsageError("no object " + key + " in bucket " + objects.bucket()));
    }
}
