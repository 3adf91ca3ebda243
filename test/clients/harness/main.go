// Command harness is the Go side of Sluice's real-client conformance suite
// (test/clients, driven by scripts/test-clients.sh). It owns the glue the
// language runners share and nothing else:
//
//	harness freeport [-n N]               print N distinct free TCP ports on 127.0.0.1, one a line
//	harness apis -bootstrap ADDR          print the API keys the broker advertises, comma-separated
//	harness api-versions -bootstrap ADDR [-out FILE]  the advertised keys with their version ranges (JSON)
//	harness create-topic -topic T [-config k=v]...  create a topic (for clients without an admin API)
//	harness scram-user -user U -password P [-mechanism M]  create a SCRAM user (for clients without an admin API)
//	harness certs -dir DIR                write a test CA (ca.pem) and a broker key store (broker.pem)
//	harness oauth-server -addr ADDR       an OAuth provider on loopback: GET /jwks, POST /token (client_credentials)
//	harness collect -out FILE [flags] DIR merge DIR/*.jsonl into results.json, print the closing line
//	harness matrix -in FILE               print the client × feature table (Markdown)
//	harness compat -in FILE -out FILE     write docs/compatibility.md from results.json and the
//	                                      "Differences from Kafka" notes in internal/broker and docs/
//
// Each runner appends one JSON object per line to its own DIR/<client>.jsonl:
//
//	{"client":"kcat","client_version":"1.7.1"}                     (once, describes the client)
//	{"client":"kcat","test":"quickstart","feature":"produce.tombstone","status":"pass","detail":"","ms":12}
//
// status is pass, fail or skip. The harness never talks to the broker except
// for the ApiVersions probe and the create-topic and scram-user stand-ins for
// clients without an admin API, and it must not import any Sluice package:
// the suite tests the broker from the outside only (compat reads Sluice's
// source comments and docs as text, to collect the documented differences).
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: harness freeport|apis|api-versions|create-topic|scram-user|certs|oauth-server|collect|matrix|compat [flags]")
		return 2
	}
	var err error
	switch args[0] {
	case "freeport":
		err = cmdFreePort(args[1:], stdout, stderr)
	case "apis":
		err = cmdAPIs(args[1:], stdout, stderr)
	case "api-versions":
		err = cmdAPIVersions(args[1:], stdout, stderr)
	case "create-topic":
		err = cmdCreateTopic(args[1:], stdout, stderr)
	case "scram-user":
		err = cmdScramUser(args[1:], stdout, stderr)
	case "certs":
		err = cmdCerts(args[1:], stdout, stderr)
	case "oauth-server":
		err = cmdOAuthServer(args[1:], stdout, stderr)
	case "collect":
		var failed bool
		failed, err = cmdCollect(args[1:], stdout, stderr)
		if err == nil && failed {
			return 1
		}
	case "matrix":
		err = cmdMatrix(args[1:], stdout, stderr)
	case "compat":
		err = cmdCompat(args[1:], stdout, stderr)
	default:
		err = fmt.Errorf("unknown subcommand %q", args[0])
	}
	if err != nil {
		fmt.Fprintln(stderr, "harness:", err)
		return 2
	}
	return 0
}
