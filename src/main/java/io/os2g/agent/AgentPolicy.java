package io.os2g.agent;

import io.os2g.Errno;
import java.util.List;

/**
 * What an agent lets the mounts it serves do, whatever a shim asks: the sources it serves and the
 * changes it makes in them. A shim is only a client of the agent; in split mode the agent holds the
 * credentials, so the agent is where the rules hold.
 *
 * @param sources {@code BUCKET} or {@code BUCKET/PREFIX/} a mount may name; empty: any
 * @param writes new files written through a mount
 * @param overwrite existing keys replaced (a write or a rename onto them)
 * @param delete keys deleted (unlink, rmdir of a marker, a rename away from a key the session did not write)
 */
public record AgentPolicy(List<String> sources, boolean writes, boolean overwrite, boolean delete) {

    /** The in-process agent of one mount: the mount's own options are the policy. */
    public static AgentPolicy of(boolean writes, boolean overwrite, boolean delete) {
        return new AgentPolicy(List.of(), writes, overwrite, delete);
    }

    public AgentPolicy {
        sources = List.copyOf(sources);
        if ((overwrite || delete) && !writes) {
            throw new IllegalArgumentException("overwrite and delete need writes: overwrite=" + overwrite + ", delete=" + delete);
        }
    }

    /**
     * Refuses a mount of {@code bucket}/{@code prefix} this agent does not serve, or one asking for writes
     * it does not take.
     */
    public void checkMount(String bucket, String prefix, boolean writesAsked) {
        if (!sources.isEmpty() && sources.stream().noneMatch(s -> serves(s, bucket, prefix))) {
            throw new AgentException(Errno.EACCES, "this agent does not serve " + bucket + "/" + prefix + " (it serves "
                    + String.join(", ", sources) + ")", null);
        }
        if (writesAsked && !writes) {
            throw new AgentException(Errno.EROFS, "this agent takes no writes (os2g agent --allow-writes)", null);
        }
    }

    private static boolean serves(String source, String bucket, String prefix) {
        int slash = source.indexOf('/');
        String sourceBucket = slash < 0 ? source : source.substring(0, slash);
        String sourcePrefix = slash < 0 ? "" : source.substring(slash + 1);
        return sourceBucket.equals(bucket) && prefix.startsWith(sourcePrefix);
    }
}
