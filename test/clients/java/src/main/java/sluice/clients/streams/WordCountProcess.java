package sluice.clients.streams;

import java.nio.file.Path;
import java.util.Properties;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;

/**
 * One instance of the word count (Main#topology) with group.protocol=streams, in a JVM of its own, for
 * InstanceKilled: it prints "STATE <state>" at each state change and runs until it is killed (SIGKILL), or
 * for at most five minutes so that it never outlives a crashed suite. Usage: WordCountProcess APP INPUT
 * OUTPUT STATE_DIR (SLUICE_BOOTSTRAP as for the suite).
 */
public final class WordCountProcess {
    private WordCountProcess() {}

    public static void main(String[] args) throws Exception {
        Properties p = Main.streamsProps(args[0], Path.of(args[3]), StreamsConfig.AT_LEAST_ONCE);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        KafkaStreams s = new KafkaStreams(Main.topology(args[1], args[2]).build(), p);
        s.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            System.out.flush();
        });
        s.start();
        Thread.sleep(5 * 60_000L);
        System.out.println("STATE TIMED_OUT");
        Runtime.getRuntime().halt(3);
    }
}
