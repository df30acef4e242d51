package io.os2g;

/** Text from outside (keys, hint lines) made safe for one log line. */
public final class LogText {

    /** Longest text shown; the rest is counted, so a huge key or line cannot flood the log. */
    static final int MAX_SHOWN = 512;

    private LogText() {
    }

    /**
     * {@code text} in single quotes with control characters (NUL, CR, LF, ESC of ANSI sequences, DEL)
     * escaped as {@code \xNN}: nothing read from a key or a user's line can forge or colour log lines.
     */
    public static String quote(String text) {
        return "'" + escape(text) + "'";
    }

    /** {@code text} with control characters escaped as {@link #quote} does, without the quotes. */
    public static String escape(String text) {
        int shown = Math.min(text.length(), MAX_SHOWN);
        StringBuilder out = new StringBuilder(shown + 16);
        for (int i = 0; i < shown; i++) {
            char c = text.charAt(i);
            if (c < 0x20 || c == 0x7f || c >= 0x80 && c < 0xa0) {
                out.append(String.format("\\x%02x", (int) c));
            } else {
                out.append(c);
            }
        }
        if (shown < text.length()) {
            out.append("... (").append(text.length() - shown).append(" more characters)");
        }
        return out.toString();
    }
}
