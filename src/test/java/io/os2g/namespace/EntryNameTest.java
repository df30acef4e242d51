package io.os2g.namespace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@Tag("unit")
class EntryNameTest {

    @ParameterizedTest
    @ValueSource(strings = {"a", "img 001.jpg", "ünïcødé", "..hidden", ".config", "a..b", "名前"})
    void acceptsPosixNames(String name) {
        assertEquals(name, EntryName.parse(name).orElseThrow().value());
    }

    @ParameterizedTest
    @ValueSource(strings = {"", ".", "..", "a/b", "nul\0byte"})
    void rejectsNamesThatCannotBeADirectoryEntry(String name) {
        assertTrue(EntryName.parse(name).isEmpty());
        assertThrows(IllegalArgumentException.class, () -> new EntryName(name));
    }

    @Test
    void rejectsNamesLongerThanNameMaxInUtf8Bytes() {
        assertTrue(EntryName.parse("a".repeat(255)).isPresent());
        assertTrue(EntryName.parse("a".repeat(256)).isEmpty());
        // 128 two-byte characters are 256 bytes
        assertTrue(EntryName.parse("é".repeat(128)).isEmpty());
    }
}
