package io.os2g.host;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.reflect.Method;

/** Access to the native structs behind jfuse's Linux x86_64 implementation classes, for fields jfuse does not expose. */
final class JfuseStructs {

    private JfuseStructs() {
    }

    /** The {@code segment()} accessor of a jfuse implementation record, or null on another platform or jfuse. */
    static MethodHandle segmentAccessor(String implementation) {
        if (!"amd64".equals(System.getProperty("os.arch")) || !"Linux".equals(System.getProperty("os.name"))) {
            return null;
        }
        try {
            Method m = Class.forName("org.cryptomator.jfuse.linux.amd64." + implementation).getDeclaredMethod("segment");
            m.setAccessible(true);
            return MethodHandles.lookup().unreflect(m);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }
}
