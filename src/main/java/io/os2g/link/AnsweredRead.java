package io.os2g.link;

/** A READ the agent answered itself: its bytes, and how many of its chunks were staged already or waited. */
public record AnsweredRead(long bytes, int hits, int misses) {
}
