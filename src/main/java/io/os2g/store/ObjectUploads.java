package io.os2g.store;

import java.util.List;

/**
 * The object-store calls of writes through a mount: multipart uploads, a single PUT for a small file,
 * deletes. Each is bounded in time and retried like a read; a part is uploaded from the caller's
 * array, which the call does not keep.
 */
public interface ObjectUploads {

    /**
     * The bytes of a part (or of a whole small object), streamed into the request as it is sent, and
     * again if it is retried: the caller keeps them until the call returns.
     */
    interface Body {
        int length();

        /** Writes all {@link #length()} bytes to {@code out}. */
        void writeTo(java.io.OutputStream out) throws java.io.IOException;

        /** A body of {@code bytes}, held as they are. */
        static Body of(byte[] bytes) {
            return new Body() {
                @Override
                public int length() {
                    return bytes.length;
                }

                @Override
                public void writeTo(java.io.OutputStream out) throws java.io.IOException {
                    out.write(bytes);
                }
            };
        }

        /**
         * Writes all {@link #length()} bytes to {@code channel} (a socket): a body held in files may send
         * them with no copy through this process (sendfile).
         */
        default void transferTo(java.nio.channels.WritableByteChannel channel) throws java.io.IOException {
            java.io.OutputStream out = java.nio.channels.Channels.newOutputStream(channel);
            writeTo(out);
            out.flush();
        }
    }

    /** Starts a multipart upload of {@code key}; returns its upload id. Nothing is visible until it completes. */
    String startUpload(String key);

    /** Uploads part {@code partNumber} (1-based) of {@code body}'s bytes; returns the part's ETag. */
    String uploadPart(String key, String uploadId, int partNumber, Body body);

    /**
     * Completes the upload from the parts' ETags in order: the object {@code key} appears whole.
     *
     * @param size the object's size, for the summary (the answer does not say)
     */
    ObjectSummary completeUpload(String key, String uploadId, List<String> partEtags, long size);

    /** Whether {@code key} exists now (one HEAD). */
    boolean exists(String key);

    /** Aborts the upload: the store drops its parts. An upload the store no longer knows is not an error. */
    void abortUpload(String key, String uploadId);

    /** Uploads {@code key} in one PUT of {@code body}'s bytes. */
    ObjectSummary putObject(String key, Body body);

    /**
     * Copies {@code from} to {@code to} in the store (CopyObject; a multipart copy above 5 GiB): the bytes
     * do not travel through this host.
     *
     * @param size {@code from}'s size
     */
    ObjectSummary copyObject(String from, String to, long size);

    /** Deletes {@code key}; a key that does not exist is not an error. */
    void deleteObject(String key);
}
