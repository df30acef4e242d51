package io.os2g.runtime;

import java.util.Locale;

/** Byte sizes as users write them: {@code 1G}, {@code 512M}, {@code 64K}, {@code 4096}. */
public final class Sizes {

    private Sizes() {
    }

    public static long parse(String option, String text) {
        String t = text.trim().toUpperCase(Locale.ROOT);
        if (t.endsWith("IB")) {
            t = t.substring(0, t.length() - 2);
        } else if (t.endsWith("B") && t.length() > 1 && !Character.isDigit(t.charAt(t.length() - 2))) {
            t = t.substring(0, t.length() - 1);
        }
        long unit = 1;
        if (!t.isEmpty()) {
            switch (t.charAt(t.length() - 1)) {
                case 'K' -> unit = 1L << 10;
                case 'M' -> unit = 1L << 20;
                case 'G' -> unit = 1L << 30;
                case 'T' -> unit = 1L << 40;
                default -> unit = 1;
            }
        }
        String digits = unit == 1 ? t : t.substring(0, t.length() - 1);
        try {
            long value = Long.parseLong(digits);
            if (value <= 0) {
                throw new UsageError(option + " must be positive: " + text);
            }
            return Math.multiplyExact(value, unit);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new UsageError(option + " is not a size (examples: 4096, 64K, 8M, 1G): " + text);
        }
    }

    public static String format(long bytes) {
        if (bytes >= 1L << 30 && bytes % (1L << 30) == 0) {
            return (bytes >> 30) + "G";
        }
        if (bytes >= 1L << 20 && bytes % (1L << 20) == 0) {
            return (bytes >> 20) + "M";
        }
        if (bytes >= 1L << 10 && bytes % (1L << 10) == 0) {
            return (bytes >> 10) + "K";
        }
        return Long.toString(bytes);
    }

    /** An approximate size for people: {@code 0 bytes}, {@code 117.7M}, {@code 3.2G}. */
    public static String approximate(long bytes) {
        if (bytes < 1024) {
            return bytes + " bytes";
        }
        String[] units = {"K", "M", "G", "T"};
        double value = bytes;
        int unit = -1;
        while (value >= 1024 && unit < units.length - 1) {
            value /= 1024;
            unit++;
        }
        return String.format(java.util.Locale.ROOT, "%.1f%s", value, units[unit]);
    }
}
