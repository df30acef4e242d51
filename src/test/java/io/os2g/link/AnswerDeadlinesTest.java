package io.os2g.link;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.os2g.Errno;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class AnswerDeadlinesTest {

    @Test
    void anAnswerThatNeverComesFailsWithEioAfterTheDeadlineAndOneThatCameIsLeftAlone() throws Exception {
        AnswerDeadlines deadlines = new AnswerDeadlines(Duration.ofMillis(200));
        try {
            CompletableFuture<String> answered = new CompletableFuture<>();
            CompletableFuture<String> never = new CompletableFuture<>();
            long t0 = System.nanoTime();
            deadlines.watch(answered);
            deadlines.watch(never);
            answered.complete("read answered");
            ExecutionException e = assertThrows(ExecutionException.class, () -> never.get(10, TimeUnit.SECONDS));
            assertEquals(Errno.EIO, assertInstanceOf(LinkException.class, e.getCause()).errno());
            long waited = System.nanoTime() - t0;
            assertTrue(waited >= TimeUnit.MILLISECONDS.toNanos(200), "not before its deadline: " + waited);
            assertEquals("read answered", answered.get());

            // asleep while nothing is out; a READ sent later still gets its deadline
            Thread.sleep(300);
            CompletableFuture<String> later = new CompletableFuture<>();
            deadlines.watch(later);
            assertThrows(ExecutionException.class, () -> later.get(10, TimeUnit.SECONDS));
        } finally {
            deadlines.close();
        }
    }
}
