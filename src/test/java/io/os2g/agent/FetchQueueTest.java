package io.os2g.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class FetchQueueTest {

    /** Holds what it is given to run; the test runs it. */
    private static final class HeldExecutor implements Executor {
        final List<Runnable> held = new ArrayList<>();
        boolean shutDown;

        @Override
        public void execute(Runnable task) {
            if (shutDown) {
                throw new RejectedExecutionException("shut down");
            }
            held.add(task);
        }

        void runFirst() {
            held.removeFirst().run();
        }
    }

    private final HeldExecutor executor = new HeldExecutor();
    private final FetchQueue queue = new FetchQueue(executor, 4); // 3 for fetches ahead, 1 kept for readers
    private final List<String> started = new ArrayList<>();
    private final List<String> abandoned = new ArrayList<>();

    private FetchQueue.Ticket submit(String name, boolean ahead) {
        return queue.submit(() -> started.add(name), e -> abandoned.add(name), ahead);
    }

    @Test
    void fetchesAheadLeaveASlotForAReaderWhoseFetchStartsAtOnce() {
        for (int i = 0; i < 6; i++) {
            submit("ahead" + i, true);
        }
        assertEquals(3, executor.held.size(), "a quarter of the slots kept for readers");
        submit("reader", false);
        assertEquals(4, executor.held.size(), "the reader's fetch took the slot kept for it");
        executor.held.removeLast().run();
        assertEquals(List.of("reader"), started);
    }

    @Test
    void aFreedSlotGoesToAWaitingReaderBeforeFetchesAhead() {
        for (int i = 0; i < 3; i++) {
            submit("ahead" + i, true);
        }
        submit("reader0", false);
        submit("ahead3", true);
        submit("reader1", false); // all 4 slots busy: waits
        assertEquals(4, executor.held.size());
        executor.runFirst(); // ahead0 ends
        assertEquals(4, executor.held.size());
        executor.held.removeLast().run();
        assertEquals(List.of("ahead0", "reader1"), started, "the freed slot went to the waiting reader, not to ahead3");
        assertEquals(3, executor.held.size(), "ahead3 waits while only the readers' slot is free");
        executor.runFirst(); // ahead1 ends
        executor.held.removeLast().run();
        assertEquals("ahead3", started.getLast());
    }

    @Test
    void aQueuedFetchAheadThatAReaderWantsGoesBeforeTheOthers() {
        for (int i = 0; i < 8; i++) {
            submit("ahead" + i, true);
        }
        FetchQueue.Ticket wanted = submit("wanted", true);
        for (int i = 0; i < 3; i++) {
            executor.runFirst(); // ahead0-2 end, ahead3-5 start
        }
        wanted.promote();
        executor.held.removeLast().run();
        assertEquals("wanted", started.getLast(), "started as a reader's, in the slot kept for readers");
        while (!executor.held.isEmpty()) {
            executor.runFirst();
        }
        assertEquals(9, started.size(), "each fetch ran once: " + started);
    }

    @Test
    void closingAbandonsQueuedFetchesAndLaterOnes() {
        for (int i = 0; i < 5; i++) {
            submit("ahead" + i, true);
        }
        queue.close();
        assertEquals(List.of("ahead3", "ahead4"), abandoned);
        submit("late", false);
        assertEquals(List.of("ahead3", "ahead4", "late"), abandoned);
        executor.runFirst();
        assertEquals(List.of("ahead0"), started, "those running end as they would");
    }

    @Test
    void aFetchTheExecutorRefusesIsAbandonedAndGivesItsSlotBack() {
        executor.shutDown = true;
        submit("refused", false);
        assertEquals(List.of("refused"), abandoned);
        executor.shutDown = false;
        for (int i = 0; i < 4; i++) {
            submit("reader" + i, false);
        }
        assertEquals(4, executor.held.size(), "all 4 slots free again");
    }
}
