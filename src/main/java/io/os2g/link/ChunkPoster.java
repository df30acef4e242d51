package io.os2g.link;

import io.os2g.staging.ChunkKey;
import io.os2g.staging.ExtentIndex;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent's side of a region on another machine: chunks staged whole are posted to the shim (the
 * frame, then the bytes from this side's pages), evicted ones recalled, in the order the index saw
 * them. Answers to stage requests go through here too, so a shim told "staged" has the chunk's post
 * before the answer. One platform thread writes; the index only queues (it calls under its lock).
 */
final class ChunkPoster implements ExtentIndex.Mirror, AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ChunkPoster.class);

    private sealed interface Item {
    }

    private record Post(ExtentIndex.Held chunk) implements Item {
    }

    private record Recall(int slot) implements Item {
    }

    private record Answer(long id, Message message) implements Item {
    }

    private final Wire wire;
    private final ArrayDeque<Item> queue = new ArrayDeque<>();
    private ExtentIndex index;
    private Thread writer;
    private boolean closed;

    ChunkPoster(Wire wire) {
        this.wire = wire;
    }

    /** Starts writing, with the bytes of {@code index}'s pages. */
    synchronized void start(ExtentIndex index) {
        this.index = index;
        writer = Thread.ofPlatform().daemon().name("os2g-agent-post").start(this::run);
    }

    @Override
    public synchronized void posted(int slot, ChunkKey key, long etagHash, int length, int[] pages) {
        enqueue(new Post(new ExtentIndex.Held(slot, key, etagHash, length, pages)));
    }

    @Override
    public synchronized void recalled(int slot) {
        enqueue(new Recall(slot));
    }

    /** Sends {@code message} after every post and recall queued so far. */
    synchronized void answer(long id, Message message) {
        enqueue(new Answer(id, message));
    }

    private void enqueue(Item item) {
        if (!closed) {
            queue.addLast(item);
            notifyAll();
        }
    }

    private void run() {
        try {
            for (;;) {
                List<Item> batch = new ArrayList<>();
                synchronized (this) {
                    while (queue.isEmpty() && !closed) {
                        wait();
                    }
                    if (closed) {
                        return;
                    }
                    batch.addAll(queue);
                    queue.clear();
                }
                write(batch);
            }
        } catch (InterruptedException e) {
            // closing
        } catch (IOException e) {
            LOG.debug("posting to the shim stopped: {}", e.toString()); // the link's reader ends the session
        }
    }

    /** Writes a batch in order; recalls in a row go in one frame. */
    private void write(List<Item> batch) throws IOException {
        int[] recalls = new int[batch.size()];
        int pending = 0;
        for (Item item : batch) {
            if (item instanceof Recall r) {
                recalls[pending++] = r.slot();
                continue;
            }
            if (pending > 0) {
                wire.send(0, new Message.Recalled(java.util.Arrays.copyOf(recalls, pending)));
                pending = 0;
            }
            switch (item) {
                case Post p -> {
                    ExtentIndex.Held c = p.chunk();
                    wire.send(0, new Message.Posted(c), c.length(), to -> index.transferPages(c.pages(), c.length(), to));
                }
                case Answer a -> wire.send(a.id(), a.message());
                case Recall r -> throw new IllegalStateException();
            }
        }
        if (pending > 0) {
            wire.send(0, new Message.Recalled(java.util.Arrays.copyOf(recalls, pending)));
        }
    }

    @Override
    public void close() {
        Thread t;
        synchronized (this) {
            closed = true;
            queue.clear();
            notifyAll();
            t = writer;
        }
        if (t != null) {
            t.interrupt();
        }
    }
}
