package io.os2g.host;

/**
 * What a mount may change in its bucket; everything off is the default, read-only mount.
 *
 * @param newFiles new files written through the mount ({@code --allow-writes}), and directories made
 * @param overwrite existing keys replaced by an open with O_TRUNC, or by a rename onto them ({@code --allow-overwrite})
 * @param delete keys removed by unlink, and renamed away from when this mount did not write them ({@code --allow-delete})
 */
public record WritePolicy(boolean newFiles, boolean overwrite, boolean delete) {

    public static final WritePolicy READ_ONLY = new WritePolicy(false, false, false);

    public WritePolicy {
        if ((overwrite || delete) && !newFiles) {
            throw new IllegalArgumentException("overwrite and delete need writes: overwrite=" + overwrite + ", delete=" + delete);
        }
    }
}
