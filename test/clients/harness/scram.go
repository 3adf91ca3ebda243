package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// scramMechanisms maps Kafka's mechanism names to kadm's.
var scramMechanisms = map[string]kadm.ScramMechanism{
	"SCRAM-SHA-256": kadm.ScramSha256,
	"SCRAM-SHA-512": kadm.ScramSha512,
}

// cmdScramUser creates (or replaces) a SCRAM credential with
// AlterUserScramCredentials, for runners whose client has no API for it
// (kafkajs), as create-topic does for topics.
func cmdScramUser(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("scram-user", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bootstrap := fs.String("bootstrap", "127.0.0.1:9092", "broker address (a PLAINTEXT listener)")
	user := fs.String("user", "", "user name (required)")
	password := fs.String("password", "", "password (required)")
	mechanism := fs.String("mechanism", "SCRAM-SHA-256", "SCRAM-SHA-256 or SCRAM-SHA-512")
	iterations := fs.Int("iterations", 8192, "PBKDF2 iterations (Kafka accepts 4096 to 16384)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *user == "" || *password == "" {
		return fmt.Errorf("scram-user: -user and -password are required")
	}
	mech, ok := scramMechanisms[*mechanism]
	if !ok {
		return fmt.Errorf("scram-user: unknown mechanism %q (want SCRAM-SHA-256 or SCRAM-SHA-512)", *mechanism)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(*bootstrap))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: *user, Mechanism: mech, Iterations: int32(*iterations), Password: *password},
	})
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("scram-user %s: %w", *user, err)
	}
	_, err = fmt.Fprintf(stdout, "created %s user %s\n", *mechanism, *user)
	return err
}
