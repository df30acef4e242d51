package io.os2g.link;

/** A READ the agent replied to itself: the bytes it sent, and how many of its chunks were staged already or waited. */
public record RepliedRead(long bytes, int hits, int misses) {
}
