package io.os2g.cli;

import io.os2g.runtime.Gateway;
import io.os2g.runtime.MountConfig;
import io.os2g.support.S3Fixture;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** In-process mounts of bucket "data" for the mount tests: staging in tmp/staging, 5 s requests, one retry. */
final class TestMounts {

    private TestMounts() {
    }

    static Gateway mount(S3Fixture s3, Path tmp, Path mnt, String... options) throws IOException {
        List<String> args = new ArrayList<>(List.of("data", mnt.toString(), "--endpoint", s3.endpoint().toString(),
                "--credentials-file", S3Fixture.credentialsFile(tmp).toString(), "--staging-dir", tmp.resolve("staging").toString(),
                "--request-timeout", "5", "--retries", "1"));
        args.addAll(List.of(options));
        MountConfig config = MountCommand.parse(args.toArray(String[]::new)).config();
        return Gateway.open(config);
    }
}
