package io.os2g.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.Configurator;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.spi.ContextAwareBase;
import ch.qos.logback.core.status.NopStatusListener;

/**
 * The default log set-up, in code rather than in a logback.xml: INFO from os2g and WARN from its
 * libraries, to stderr. Reading an XML configuration loads an XML parser and logback's own reader
 * of it, about 550 classes, in every process (a mount, the agent, {@code os2g stats}) before it does
 * anything; this takes none of them. A configuration file a user names with {@code -Dlogback.configurationFile}, or a
 * logback-test.xml on the class path, still wins.
 */
public final class LogConfigurator extends ContextAwareBase implements Configurator {

    static final String STDERR = "STDERR";

    @Override
    public ExecutionStatus configure(LoggerContext context) {
        if (System.getProperty("logback.configurationFile") != null
                || LogConfigurator.class.getClassLoader().getResource("logback-test.xml") != null) {
            return ExecutionStatus.INVOKE_NEXT_IF_ANY;
        }
        applyDefaults(context);
        return ExecutionStatus.DO_NOT_INVOKE_NEXT_IF_ANY;
    }

    static void applyDefaults(LoggerContext context) {
        context.getStatusManager().add(new NopStatusListener());
        PatternLayoutEncoder encoder = new PatternLayoutEncoder();
        encoder.setContext(context);
        encoder.setPattern("%d{HH:mm:ss.SSS} %-5level %logger{0}: %msg%n");
        encoder.start();
        ConsoleAppender<ILoggingEvent> appender = new ConsoleAppender<>();
        appender.setContext(context);
        appender.setName(STDERR);
        appender.setTarget("System.err");
        appender.setEncoder(encoder);
        appender.start();
        context.getLogger("io.os2g").setLevel(Level.INFO);
        Logger root = context.getLogger(Logger.ROOT_LOGGER_NAME);
        root.setLevel(Level.WARN);
        root.addAppender(appender);
    }
}
