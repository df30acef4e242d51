package io.os2g.cli;

import io.os2g.runtime.CsiPlugin;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "csi-mounter", sortOptions = false, usageHelpAutoWidth = true,
        description = {"Run the mount processes of the node plugin (os2g csi --mounter): in a container of its own, so that",
                "the plugin's restarts and upgrades leave the pods' mounts serving. Stays until SIGTERM; its mounts end with it."})
final class CsiMounterCommand implements Callable<Integer> {

    private static final Logger LOG = LoggerFactory.getLogger(CsiMounterCommand.class);

    @Option(names = "--listen", required = true, paramLabel = "unix:///PATH", description = "The socket the plugin calls (created 0600).")
    String listen;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help.")
    boolean help;

    @Mixin
    ServiceOptions service = new ServiceOptions();

    @Override
    public Integer call() throws Exception {
        service.configureLogging();
        Runnable stop = CsiPlugin.startMounter(listen);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop.run();
            stopped.countDown();
        }, "os2g-mounter-shutdown"));
        LOG.info("mounter listening on {}", listen);
        stopped.await();
        return 0;
    }
}
