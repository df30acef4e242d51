package io.os2g.cli;

import io.os2g.runtime.UsageError;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code os2g}: the entry point. */
@Command(name = "os2g", mixinStandardHelpOptions = true, versionProvider = Os2g.Version.class,
        description = {"Mount S3-compatible buckets for GPU training (checkpoints written back on request): FUSE shim, object-store agent, shared-memory staging."})
public final class Os2g implements Runnable {

    /** Exit code for anything the user can fix. */
    static final int USAGE = 2;

    /** The S3 server's command: in the optional jar of {@code io.os2g.s3server}, loaded only where it is installed. */
    static final String S3_SERVER_COMMAND = "io.os2g.s3server.S3ServerCommand";
    /** How to get the S3 server where it is missing. */
    static final String S3_SERVER_MISSING = "the S3 server of the demo and the tests (os2g-s3-server.jar) is not installed here: "
            + "run os2g from its source tree, or install it with mount-scripts/install.sh --with-s3-server";

    /** In the order {@code os2g --help} lists them. */
    private static final List<Class<?>> SUBCOMMANDS = subcommands();

    private static List<Class<?>> subcommands() {
        List<Class<?>> commands = new ArrayList<>(List.of(MountCommand.class, AgentCommand.class, CsiCommand.class, CsiMounterCommand.class, StatsCommand.class,
                WarmCommand.class, IndexCommand.class, CacheCommand.class, DemoCommand.class));
        Class<?> s3Server = s3ServerCommand();
        if (s3Server != null) {
            commands.add(s3Server);
        }
        return List.copyOf(commands);
    }

    /** The S3 server's command class, or null where its jar is not on the class path. */
    static Class<?> s3ServerCommand() {
        try {
            return Class.forName(S3_SERVER_COMMAND, false, Os2g.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.err);
    }

    public static void main(String[] args) {
        System.exit(run(args));
    }

    static int run(String... args) {
        CommandLine cli = commandLine(args.length > 0 ? args[0] : "");
        cli.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
            if (e instanceof UsageError) {
                System.err.println("os2g: " + e.getMessage());
                return USAGE;
            }
            if (Logging.debug()) {
                e.printStackTrace();
            } else {
                System.err.println("os2g: " + (e.getMessage() != null ? e.getMessage() : e.toString()) + " (--debug shows more)");
            }
            return e instanceof io.os2g.ErrnoException ? USAGE : 1;
        });
        cli.setParameterExceptionHandler((e, a) -> {
            String command = e.getCommandLine().getCommandName().equals("os2g") ? "os2g" : "os2g " + e.getCommandLine().getCommandName();
            System.err.println("os2g: " + e.getMessage() + " (" + command + " --help lists the options)");
            return USAGE;
        });
        if (args.length > 0 && args[0].equals("s3-server") && s3ServerCommand() == null) {
            System.err.println("os2g: " + S3_SERVER_MISSING);
            return USAGE;
        }
        if (args.length > 0 && args[0].equals("mount")) {
            try {
                args = FstabOptions.expand(args, cli.getSubcommands().get("mount").getCommandSpec());
            } catch (UsageError e) {
                System.err.println("os2g: " + e.getMessage());
                return USAGE;
            }
        }
        return cli.execute(args);
    }

    /**
     * The command line with only the subcommand {@code named}, or with all of them when it names none
     * (help, a typo): picocli reads every option of a command when the command is added, and a mount
     * or an agent has no use for the other commands' options.
     */
    static CommandLine commandLine(String named) {
        CommandLine cli = new CommandLine(new Os2g());
        boolean known = SUBCOMMANDS.stream().anyMatch(c -> name(c).equals(named));
        for (Class<?> command : SUBCOMMANDS) {
            if (!known || name(command).equals(named)) {
                cli.addSubcommand(command);
            }
        }
        return cli;
    }

    private static String name(Class<?> command) {
        return command.getAnnotation(Command.class).name();
    }

    /** The version from the jar manifest (set by Maven). */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = Os2g.class.getPackage().getImplementationVersion();
            return new String[] {"os2g " + (v == null ? "dev" : v) + " (Java " + Runtime.version() + ")"};
        }
    }
}
