package sluice.clients.tools;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.common.utils.internals.Exit;

/**
 * Runs one of Kafka's command-line tools the way its shell script would (the tool class's
 * {@code main} with the script's arguments), but inside this JVM: a JVM per command would cost more
 * than the scenarios themselves. Kafka's tools end through {@link Exit}, so its exit procedure is
 * replaced by one that unwinds with the status, its shutdown hooks are collected and run after main
 * (as the JVM would run them on exit: ConsoleProducer flushes its producer in one), and stdin, stdout
 * and stderr are swapped for in-memory streams while the tool runs. Commands run one at a time.
 */
final class ToolRunner {
    /** The outcome of one command. */
    record Result(String command, int status, String out, String err) {
        /** Throws unless the command exited 0, quoting what it printed. */
        Result ok() {
            if (status != 0) {
                throw new AssertionError(this + " failed");
            }
            return this;
        }

        @Override
        public String toString() {
            return command + " exited " + status + "; stdout: " + tail(out) + "; stderr: " + tail(err);
        }

        private static String tail(String s) {
            String t = s.strip();
            return t.length() > 1200 ? "..." + t.substring(t.length() - 1200) : t;
        }
    }

    /** Unwinds a tool's main when it calls Exit.exit/halt. An Error, so tools' catch (Exception) skip it. */
    private static final class ExitCalled extends Error {
        ExitCalled(int status) {
            super("exit " + status, null, false, false);
        }
    }

    private ToolRunner() {}

    /** Runs script's main class with args and an empty stdin. */
    static Result run(String script, String mainClass, String... args) throws Exception {
        return runWithInput(script, mainClass, "", args);
    }

    /** Runs script's main class with args, feeding stdin. */
    static synchronized Result runWithInput(String script, String mainClass, String stdin, String... args)
            throws Exception {
        Method main = Class.forName(mainClass).getMethod("main", String[].class);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        InputStream oldIn = System.in;
        List<Thread> hooks = new ArrayList<>();
        int status = 0;
        PrintStream newOut = new PrintStream(out, true, StandardCharsets.UTF_8);
        PrintStream newErr = new PrintStream(err, true, StandardCharsets.UTF_8);
        // The first exit ends a real process, whatever a tool's catch blocks do with the unwinding.
        AtomicReference<Integer> firstExit = new AtomicReference<>();
        Exit.setExitProcedure((code, msg) -> {
            firstExit.compareAndSet(null, code);
            throw new ExitCalled(code);
        });
        Exit.setHaltProcedure((code, msg) -> {
            firstExit.compareAndSet(null, code);
            throw new ExitCalled(code);
        });
        Exit.setShutdownHookAdder((name, runnable) -> hooks.add(new Thread(runnable, name)));
        System.setIn(new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)));
        System.setOut(newOut);
        System.setErr(newErr);
        try {
            try {
                main.invoke(null, (Object) args);
            } catch (InvocationTargetException e) {
                if (!(e.getCause() instanceof ExitCalled)) {
                    e.getCause().printStackTrace(newErr);
                    status = 1;
                }
            }
            if (firstExit.get() != null) {
                status = firstExit.get();
            }
            // What the JVM does on exit: run every registered hook and wait for them.
            for (Thread t : hooks) {
                t.start();
            }
            for (Thread t : hooks) {
                t.join(30_000);
            }
        } finally {
            newOut.flush();
            newErr.flush();
            System.setOut(oldOut);
            System.setErr(oldErr);
            System.setIn(oldIn);
            Exit.resetExitProcedure();
            Exit.resetHaltProcedure();
            Exit.resetShutdownHookAdder();
        }
        Result r = new Result(script + " " + String.join(" ", Arrays.asList(args)), status,
                out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        oldOut.println("  $ " + r.command() + "  -> exit " + status);
        return r;
    }
}
