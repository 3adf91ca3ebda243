package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// cmdCollect merges the runners' JSONL files into one report, writes it,
// prints every failure and skip with its detail and then the closing line.
// It reports failed=true when any scenario failed.
func cmdCollect(args []string, stdout, stderr io.Writer) (failed bool, err error) {
	fs := flag.NewFlagSet("collect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "write the JSON report here (required)")
	brokerVersion := fs.String("broker-version", "", "the broker's version string, recorded in the report")
	apis := fs.String("apis", "", "comma-separated API keys the broker advertised, recorded in the report")
	strict := fs.Bool("strict", false, "count skipped scenarios as failures")
	apiVersions := fs.String("api-versions", "", "the broker's ApiVersions as written by harness api-versions, recorded in the report")
	if err := fs.Parse(args); err != nil {
		return false, err
	}
	if *out == "" || fs.NArg() != 1 {
		return false, fmt.Errorf("usage: harness collect -out FILE [-strict] [-api-versions FILE] DIR")
	}
	clients, results, err := readDir(fs.Arg(0))
	if err != nil {
		return false, err
	}
	if len(results) == 0 {
		return false, fmt.Errorf("no results in %s: no runner reported anything", fs.Arg(0))
	}
	rep := Report{
		GeneratedAt:   time.Now().UTC().Format(time.RFC3339),
		BrokerVersion: *brokerVersion,
		Clients:       clients,
		Results:       results,
		Summary:       summarize(results, *strict),
	}
	if *apis != "" {
		rep.BrokerAPIs = strings.Split(*apis, ",")
	}
	if *apiVersions != "" {
		data, err := os.ReadFile(*apiVersions)
		if err != nil {
			return false, err
		}
		if err := json.Unmarshal(data, &rep.BrokerAPIVersions); err != nil {
			return false, fmt.Errorf("%s: %w", *apiVersions, err)
		}
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return false, err
	}
	if err := os.WriteFile(*out, append(data, '\n'), 0o644); err != nil {
		return false, err
	}
	for _, r := range results {
		if r.Status == statusPass {
			continue
		}
		fmt.Fprintf(stdout, "%s %s/%s: %s\n", strings.ToUpper(r.Status), r.Client, r.Test, r.Detail)
	}
	fmt.Fprintln(stdout, rep.Summary.Line())
	return rep.Summary.Failed > 0, nil
}
