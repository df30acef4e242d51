package io.os2g.fuse;

/**
 * A READ its session left to another holder of the mount's /dev/fuse ({@link ReadReply#forward}): the
 * request's number for that holder's reply ({@link LentDeviceReplies}), and the session's own error reply for
 * when the holder could not answer. Until {@link #answered} or {@link #fail}, an INTERRUPT of the READ is
 * answered EINTR by the session (the holder's late reply then finds the number gone, harmlessly).
 */
public final class ForwardedRead {

    private final FuseSession session;
    private final long unique;

    ForwardedRead(FuseSession session, long unique) {
        this.session = session;
        this.unique = unique;
    }

    /** The request's number: the kernel matches the reply to its READ by it. */
    public long unique() {
        return unique;
    }

    /** The holder answered it: an INTERRUPT for it has nothing left to cancel. */
    public void answered() {
        session.forwardedAnswered(unique);
    }

    /**
     * Answers the READ with {@code errno} from the session itself (nothing happens once the session is
     * closed, or when the READ was answered already: the kernel no longer knows the number).
     */
    public void fail(int errno) {
        session.forwardedAnswered(unique);
        session.answerError(unique, errno);
    }
}
