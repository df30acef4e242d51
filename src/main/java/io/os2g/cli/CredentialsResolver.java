package io.os2g.cli;

import io.os2g.runtime.UsageError;
import io.os2g.store.Credentials;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Finds credentials the way the AWS CLI does, never from a command-line value: an explicit
 * {@code --credentials-file} or {@code --profile}, then {@code AWS_ACCESS_KEY_ID} /
 * {@code AWS_SECRET_ACCESS_KEY} / {@code AWS_SESSION_TOKEN}, then the {@code default} profile of the
 * shared credentials file; with none of these, requests go unsigned.
 */
final class CredentialsResolver {

    private final Map<String, String> env;
    private final Path home;

    CredentialsResolver(Map<String, String> env, Path home) {
        this.env = env;
        this.home = home;
    }

    /** Where the credentials came from, for the log; never the secret. */
    record Resolved(Credentials credentials, String source) {
    }

    Resolved resolve(boolean noSignRequest, String profile, Path credentialsFile) {
        if (noSignRequest) {
            return new Resolved(Credentials.anonymous(), "--no-sign-request");
        }
        if (credentialsFile != null) {
            String name = profile != null ? profile : "default";
            return new Resolved(fromFile(credentialsFile, name, true), "profile " + name + " of " + credentialsFile);
        }
        Path shared = env.containsKey("AWS_SHARED_CREDENTIALS_FILE")
                ? Path.of(env.get("AWS_SHARED_CREDENTIALS_FILE")) : home.resolve(".aws/credentials");
        if (profile != null) {
            return new Resolved(fromFile(shared, profile, true), "profile " + profile + " of " + shared);
        }
        String key = env.get("AWS_ACCESS_KEY_ID");
        String secret = env.get("AWS_SECRET_ACCESS_KEY");
        if (key != null && !key.isEmpty()) {
            if (secret == null || secret.isEmpty()) {
                throw new UsageError("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
            }
            return new Resolved(new Credentials(key, secret, blankToNull(env.get("AWS_SESSION_TOKEN"))), "environment");
        }
        String envProfile = env.get("AWS_PROFILE");
        if (envProfile != null && !envProfile.isEmpty()) {
            return new Resolved(fromFile(shared, envProfile, true), "profile " + envProfile + " of " + shared);
        }
        if (Files.isReadable(shared)) {
            Credentials c = fromFile(shared, "default", false);
            if (c != null) {
                return new Resolved(c, "profile default of " + shared);
            }
        }
        return new Resolved(Credentials.anonymous(), "none found: requests are unsigned");
    }

    private static Credentials fromFile(Path file, String profile, boolean required) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file);
        } catch (IOException e) {
            throw new UsageError("cannot read credentials file " + file + ": " + e.getMessage());
        }
        Map<String, String> section = null;
        Map<String, Map<String, String>> sections = new HashMap<>();
        for (String raw : lines) {
            String line = raw.strip();
            if (line.isEmpty() || line.startsWith("#") || line.startsWith(";")) {
                continue;
            }
            if (line.startsWith("[") && line.endsWith("]")) {
                String name = line.substring(1, line.length() - 1).strip();
                if (name.startsWith("profile ")) {
                    name = name.substring("profile ".length()).strip();
                }
                section = sections.computeIfAbsent(name, n -> new HashMap<>());
                continue;
            }
            int eq = line.indexOf('=');
            if (section != null && eq > 0) {
                section.put(line.substring(0, eq).strip().toLowerCase(java.util.Locale.ROOT), line.substring(eq + 1).strip());
            }
        }
        Map<String, String> values = sections.get(profile);
        if (values == null || !values.containsKey("aws_access_key_id") || !values.containsKey("aws_secret_access_key")) {
            if (!required) {
                return null;
            }
            throw new UsageError("profile " + profile + " in " + file + " has no aws_access_key_id and aws_secret_access_key");
        }
        return new Credentials(values.get("aws_access_key_id"), values.get("aws_secret_access_key"),
                blankToNull(values.get("aws_session_token")));
    }

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s;
    }
}
