package io.os2g;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

@Tag("unit")
class WarningLimiterTest {

    @Test
    void aBurstPerKindPerMinuteThenASummaryOfWhatWasLeftOut() {
        Logger logger = (Logger) LoggerFactory.getLogger("io.os2g.test.limiter");
        ListAppender<ILoggingEvent> seen = new ListAppender<>();
        seen.start();
        logger.addAppender(seen);
        AtomicLong now = new AtomicLong(1_000);
        WarningLimiter limiter = new WarningLimiter(logger, now::get);

        for (int i = 0; i < 100; i++) {
            limiter.warn("read EIO", "read {}: {}", "f" + i, "store down");
        }
        limiter.warn("open ESTALE", "open {}: {}", "g", "changed");
        assertEquals(WarningLimiter.BURST + 1, seen.list.size(), "a burst of the first kind, and the other kind");
        assertTrue(seen.list.get(WarningLimiter.BURST - 1).getFormattedMessage().endsWith("left out for a minute)"));
        assertEquals("open g: changed", seen.list.get(WarningLimiter.BURST).getFormattedMessage());

        now.addAndGet(WarningLimiter.WINDOW_NANOS);
        limiter.warn("read EIO", "read {}: {}", "f100", "store down");
        assertEquals("read f100: store down (95 more like it were not logged in the last minute)",
                seen.list.getLast().getFormattedMessage());
        limiter.warn("read EIO", "read {}: {}", "f101", "store down");
        assertEquals("read f101: store down", seen.list.getLast().getFormattedMessage());
    }
}
