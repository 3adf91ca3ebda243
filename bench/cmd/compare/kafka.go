package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Apache Kafka's own start script (kafka-server-start.sh / kafka-run-class.sh)
// uses these JVM options unless KAFKA_HEAP_OPTS / KAFKA_JVM_PERFORMANCE_OPTS
// are set; we start the broker the way a user of the distribution gets it.
var kafkaJVMOpts = []string{
	"-Xmx1G", "-Xms1G",
	"-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
	"-XX:MaxInlineLevel=15", "-Djava.awt.headless=true",
}

// kafkaLibs makes sure bench/.cache/kafka-VERSION/libs holds kafka_2.13 and
// its runtime dependencies, resolving them with Maven from bench/kafka/pom.xml
// when the directory is missing or empty.
func kafkaLibs(o *options) (string, error) {
	dir := filepath.Join(o.cacheDir, "kafka-"+o.kafkaVersion, "libs")
	if jars, _ := filepath.Glob(filepath.Join(dir, "kafka_2.13-*.jar")); len(jars) > 0 {
		return dir, nil
	}
	logf("resolving Apache Kafka %s with Maven into %s", o.kafkaVersion, dir)
	cmd := exec.Command("mvn", "-B", "-q", "-f", filepath.Join(o.root, "bench", "kafka", "pom.xml"),
		"dependency:copy-dependencies", "-DincludeScope=runtime",
		"-Dkafka.version="+o.kafkaVersion, "-DoutputDirectory="+dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("mvn dependency:copy-dependencies (is Maven installed? apt-get install maven): %w", err)
	}
	return dir, nil
}

// kafkaProperties is a single-node KRaft (combined broker+controller) config
// on loopback. Everything not listed is Kafka's default; the replication
// factors of internal topics are 1 as in the distribution's sample config
// for one node.
func kafkaProperties(port, ctrlPort int, dataDir string) string {
	return strings.Join([]string{
		"process.roles=broker,controller",
		"node.id=1",
		fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d", ctrlPort),
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, ctrlPort),
		fmt.Sprintf("advertised.listeners=PLAINTEXT://127.0.0.1:%d", port),
		"controller.listener.names=CONTROLLER",
		"inter.broker.listener.name=PLAINTEXT",
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"log.dirs=" + dataDir,
		"offsets.topic.replication.factor=1",
		"transaction.state.log.replication.factor=1",
		"transaction.state.log.min.isr=1",
		"share.coordinator.state.topic.replication.factor=1",
		"share.coordinator.state.topic.min.isr=1",
		"",
	}, "\n")
}

const kafkaLog4j = `rootLogger.level=WARN
rootLogger.appenderRef.stdout.ref=STDOUT
appender.stdout.type=Console
appender.stdout.name=STDOUT
appender.stdout.layout.type=PatternLayout
appender.stdout.layout.pattern=[%d] %p %m (%c)%n
`

// startKafka formats a fresh KRaft log dir with a generated cluster id and
// runs kafka.Kafka.
func startKafka(o *options) (*target, error) {
	libs, err := kafkaLibs(o)
	if err != nil {
		return nil, err
	}
	cp := filepath.Join(libs, "*")
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	ctrlPort, err := freePort()
	if err != nil {
		return nil, err
	}
	if ctrlPort == port {
		if ctrlPort, err = freePort(); err != nil {
			return nil, err
		}
	}
	dir := filepath.Join(o.workDir, "kafka-data")
	if err := freshDir(dir); err != nil {
		return nil, err
	}
	props := filepath.Join(o.tmpDir, "kafka-server.properties")
	if err := os.WriteFile(props, []byte(kafkaProperties(port, ctrlPort, dir)), 0o644); err != nil {
		return nil, err
	}
	log4j := filepath.Join(o.tmpDir, "kafka-log4j2.properties")
	if err := os.WriteFile(log4j, []byte(kafkaLog4j), 0o644); err != nil {
		return nil, err
	}
	logOpt := "-Dlog4j2.configurationFile=" + log4j

	var out bytes.Buffer
	uuidCmd := exec.Command("java", logOpt, "-cp", cp, "kafka.tools.StorageTool", "random-uuid")
	uuidCmd.Stdout = &out
	if err := uuidCmd.Run(); err != nil {
		return nil, fmt.Errorf("kafka StorageTool random-uuid: %w", err)
	}
	clusterID := strings.TrimSpace(lastLine(out.String()))
	format := exec.Command("java", logOpt, "-cp", cp, "kafka.tools.StorageTool", "format", "-t", clusterID, "-c", props)
	if b, err := format.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("kafka StorageTool format: %w\n%s", err, b)
	}

	args := append([]string{}, kafkaJVMOpts...)
	args = append(args, logOpt, "-cp", cp, "kafka.Kafka", props)
	t, err := startProcess("kafka", exec.Command("java", args...), filepath.Join(o.tmpDir, "kafka.log"), nil)
	if err != nil {
		return nil, err
	}
	t.addr, t.dataDir, t.durable = fmt.Sprintf("127.0.0.1:%d", port), dir, true
	return t, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// javaVersion returns the first line of `java -version`.
func javaVersion() string {
	b, err := exec.Command("java", "-version").CombinedOutput()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
}
