package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Status values a runner may report.
const (
	statusPass = "pass"
	statusFail = "fail"
	statusSkip = "skip"
)

// Result is one scenario's outcome, as a runner reports it.
type Result struct {
	Client  string `json:"client"`
	Test    string `json:"test"`
	Feature string `json:"feature"`
	Status  string `json:"status"`
	Detail  string `json:"detail,omitempty"`
	Millis  int64  `json:"ms"`
}

// Client describes one client library as its runner saw it.
type Client struct {
	ID      string `json:"id"`
	Version string `json:"version,omitempty"`
}

// Summary counts results by status.
type Summary struct {
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
}

// Line is the suite's closing line: "N passed, N failed[, N skipped]".
func (s Summary) Line() string {
	line := fmt.Sprintf("%d passed, %d failed", s.Passed, s.Failed)
	if s.Skipped > 0 {
		line += fmt.Sprintf(", %d skipped", s.Skipped)
	}
	return line
}

// Report is test/clients/results.json.
type Report struct {
	GeneratedAt   string   `json:"generated_at"`
	BrokerVersion string   `json:"broker_version,omitempty"`
	BrokerAPIs    []string `json:"broker_apis,omitempty"`
	// BrokerAPIVersions is the broker's ApiVersions answer (harness api-versions).
	BrokerAPIVersions []APIVersion `json:"broker_api_versions,omitempty"`
	Clients           []Client     `json:"clients"`
	Results           []Result     `json:"results"`
	Summary           Summary      `json:"summary"`
}

// line is the union of the two kinds of JSONL records.
type line struct {
	Result
	ClientVersion string `json:"client_version"`
}

// readDir reads every *.jsonl file in dir, in name order.
func readDir(dir string) ([]Client, []Result, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(files)
	var clients []Client
	var results []Result
	seen := map[string]int{}
	for _, f := range files {
		cs, rs, err := readFile(f)
		if err != nil {
			return nil, nil, err
		}
		for _, c := range cs {
			if i, ok := seen[c.ID]; ok {
				clients[i] = c
				continue
			}
			seen[c.ID] = len(clients)
			clients = append(clients, c)
		}
		results = append(results, rs...)
	}
	return clients, results, nil
}

func readFile(name string) ([]Client, []Result, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var clients []Client
	var results []Result
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var l line
		if err := json.Unmarshal([]byte(text), &l); err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		if l.Client == "" {
			return nil, nil, fmt.Errorf("%s:%d: no client", name, n)
		}
		if l.Test == "" {
			if l.ClientVersion == "" {
				return nil, nil, fmt.Errorf("%s:%d: neither a test nor a client_version", name, n)
			}
			clients = append(clients, Client{ID: l.Client, Version: l.ClientVersion})
			continue
		}
		switch l.Status {
		case statusPass, statusFail, statusSkip:
		default:
			return nil, nil, fmt.Errorf("%s:%d: status %q is not pass, fail or skip", name, n, l.Status)
		}
		if l.Feature == "" {
			l.Feature = l.Test
		}
		results = append(results, l.Result)
	}
	return clients, results, sc.Err()
}

// summarize counts results; with strict, a skip counts as a failure.
func summarize(results []Result, strict bool) Summary {
	var s Summary
	for _, r := range results {
		switch {
		case r.Status == statusPass:
			s.Passed++
		case r.Status == statusFail, strict && r.Status == statusSkip:
			s.Failed++
		default:
			s.Skipped++
		}
	}
	return s
}
