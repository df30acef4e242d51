package io.os2g.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.Configurator;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.LoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class LogConfiguratorTest {

    @Test
    void os2gLogsInfoAndItsLibrariesWarningsToStderrOneLineEach() {
        LoggerContext context = new LoggerContext();
        LogConfigurator.applyDefaults(context);
        Logger root = context.getLogger(Logger.ROOT_LOGGER_NAME);
        assertEquals(Level.WARN, root.getLevel());
        assertEquals(Level.INFO, context.getLogger("io.os2g.runtime.Gateway").getEffectiveLevel());
        assertEquals(Level.WARN, context.getLogger("okhttp3.OkHttpClient").getEffectiveLevel());

        ConsoleAppender<ILoggingEvent> stderr = (ConsoleAppender<ILoggingEvent>) root.getAppender(LogConfigurator.STDERR);
        assertEquals("System.err", stderr.getTarget());
        Logger gateway = context.getLogger("io.os2g.runtime.Gateway");
        String line = encode(stderr, new LoggingEvent(Logger.FQCN, gateway, Level.INFO, "mounted {} at {}", null, new Object[] {"b/", "/mnt"}));
        assertTrue(line.matches("\\d\\d:\\d\\d:\\d\\d\\.\\d{3} INFO  Gateway: mounted b/ at /mnt\n"), line);
        String failure = encode(stderr, new LoggingEvent(Logger.FQCN, gateway, Level.WARN, "read failed", new IOException("reset"), null));
        assertTrue(failure.contains("WARN  Gateway: read failed\njava.io.IOException: reset\n\tat "), failure);
    }

    @Test
    void aConfigurationFileTheUserNamesWins() {
        System.setProperty("logback.configurationFile", "/etc/os2g/logback.xml");
        try {
            LoggerContext context = new LoggerContext();
            assertEquals(Configurator.ExecutionStatus.INVOKE_NEXT_IF_ANY, new LogConfigurator().configure(context));
            assertFalse(context.getLogger(Logger.ROOT_LOGGER_NAME).iteratorForAppenders().hasNext());
        } finally {
            System.clearProperty("logback.configurationFile");
        }
    }

    @Test
    void logbackFindsItAsAService() {
        assertTrue(ServiceLoader.load(Configurator.class).stream().anyMatch(p -> p.type() == LogConfigurator.class));
    }

    private static String encode(ConsoleAppender<ILoggingEvent> appender, ILoggingEvent event) {
        return new String(appender.getEncoder().encode(event), StandardCharsets.UTF_8);
    }
}
