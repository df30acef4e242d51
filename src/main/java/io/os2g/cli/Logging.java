package io.os2g.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import org.slf4j.LoggerFactory;

/** Log levels chosen on the command line (the format is in logback.xml). */
final class Logging {

    private static volatile boolean debug;

    private Logging() {
    }

    static void configure(boolean debugEnabled) {
        debug = debugEnabled;
        if (debugEnabled) {
            ((Logger) LoggerFactory.getLogger("io.os2g")).setLevel(Level.DEBUG);
        }
    }

    static boolean debug() {
        return debug;
    }
}
