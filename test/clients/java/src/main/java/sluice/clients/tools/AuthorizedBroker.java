package sluice.clients.tools;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import sluice.clients.Harness;

/**
 * A second Sluice broker of the suite's binary (SLUICE_BIN) with the authorizer on, for the kafka-acls
 * scenario: a SASL_PLAINTEXT listener with PLAIN users admin (a super user) and alice, its own data
 * directory, no metrics endpoint. Closing it stops the process and removes the directory.
 */
final class AuthorizedBroker implements AutoCloseable {
    final String bootstrap;
    final Path dir;
    private final Process process;

    private AuthorizedBroker(String bootstrap, Path dir, Process process) {
        this.bootstrap = bootstrap;
        this.dir = dir;
        this.process = process;
    }

    static AuthorizedBroker start() throws Exception {
        String bin = Harness.env("SLUICE_BIN", "");
        if (bin.isEmpty()) {
            throw new Harness.Skipped("not set: SLUICE_BIN (the scenario starts its own broker with an authorizer)");
        }
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String bootstrap = "127.0.0.1:" + port;
        Path dir = Files.createTempDirectory("sluice-acls");
        Files.writeString(dir.resolve("server.properties"), String.join("\n",
                "listeners=SASL_PLAINTEXT://" + bootstrap,
                "sasl.enabled.mechanisms=PLAIN",
                "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                        + "username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" "
                        + "user_alice=\"alice-secret\";",
                "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users=User:admin",
                "offsets.topic.num.partitions=1",
                ""));
        Process p = new ProcessBuilder(bin, "--config", dir.resolve("server.properties").toString(),
                "--data-dir", dir.resolve("data").toString(), "--metrics-listen", "")
                .redirectErrorStream(true).redirectOutput(dir.resolve("sluice.log").toFile()).start();
        AuthorizedBroker b = new AuthorizedBroker(bootstrap, dir, p);
        try {
            Harness.eventually("the authorizer broker listens on " + bootstrap, 30_000, () -> {
                if (!p.isAlive()) {
                    return false;
                }
                try (Socket s = new Socket("127.0.0.1", port)) {
                    return true;
                } catch (IOException e) {
                    return false;
                }
            });
        } catch (Throwable t) {
            String log = Files.readString(dir.resolve("sluice.log"));
            b.close();
            throw new AssertionError("broker with authorizer did not start: " + log, t);
        }
        return b;
    }

    /** Writes a client config logging in as user over PLAIN and returns its path. */
    String clientConfig(String user) throws IOException {
        Path f = dir.resolve(user + ".properties");
        Files.writeString(f, String.join("\n",
                "security.protocol=SASL_PLAINTEXT",
                "sasl.mechanism=PLAIN",
                "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
                        + user + "\" password=\"" + user + "-secret\";",
                ""));
        return f.toString();
    }

    String log() throws IOException {
        return Files.readString(dir.resolve("sluice.log"));
    }

    @Override
    public void close() throws Exception {
        process.destroy();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
        }
    }
}
