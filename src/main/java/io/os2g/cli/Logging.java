package io.os2g.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.FileAppender;
import io.os2g.runtime.UsageError;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.slf4j.LoggerFactory;

/** Log level and destination chosen on the command line (the default, INFO to stderr, is LogConfigurator's). */
final class Logging {

    private static volatile boolean debug;

    private Logging() {
    }

    static void configure(boolean debugEnabled) {
        configure(debugEnabled, null);
    }

    /** @param logFile where to append the log instead of stderr; null keeps stderr */
    static void configure(boolean debugEnabled, Path logFile) {
        debug = debugEnabled;
        if (debugEnabled) {
            ((Logger) LoggerFactory.getLogger("io.os2g")).setLevel(Level.DEBUG);
        }
        if (logFile != null) {
            toFile(logFile.toAbsolutePath());
        }
    }

    private static void toFile(Path file) {
        try {
            Files.createDirectories(file.getParent());
            Files.newOutputStream(file, java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND).close();
        } catch (IOException e) {
            throw new UsageError("--log-file " + file + ": cannot write it (" + e.getMessage() + ")");
        }
        LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
        PatternLayoutEncoder encoder = new PatternLayoutEncoder();
        encoder.setContext(context);
        // a file outlives the day: full date, and the pid to tell restarts apart
        encoder.setPattern("%d{yyyy-MM-dd HH:mm:ss.SSS} " + ProcessHandle.current().pid() + " %-5level %logger{0}: %msg%n");
        encoder.start();
        FileAppender<ILoggingEvent> appender = new FileAppender<>();
        appender.setContext(context);
        appender.setName("FILE");
        appender.setFile(file.toString());
        appender.setAppend(true); // O_APPEND: logrotate's copytruncate leaves no hole
        appender.setEncoder(encoder);
        appender.start();
        Logger root = context.getLogger(Logger.ROOT_LOGGER_NAME);
        root.addAppender(appender);
        root.detachAppender(LogConfigurator.STDERR);
    }

    static boolean debug() {
        return debug;
    }
}
