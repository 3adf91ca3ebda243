package broker

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestMetricsEndpoint(t *testing.T) {
	tb := startTestBroker(t, testOptions{MetricsListen: "127.0.0.1:0"})
	tb.admin().CreateTopic(ctx(t), 3, 1, nil, "measured")
	tb.raw().apiVersions(t)

	get := func() string {
		resp, err := http.Get("http://" + tb.srv.MetricsAddr().String() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var body string
	waitFor(t, "request metrics", func() bool {
		body = get()
		return strings.Contains(body, `sluice_requests_total{api="CreateTopics"} 1`)
	})
	for _, want := range []string{
		`sluice_request_duration_seconds_bucket{api="ApiVersions"`,
		"sluice_bytes_in_total", "sluice_bytes_out_total",
		"sluice_connections ", "sluice_connections_opened_total",
		"sluice_partitions",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// 3 partitions of "measured" plus any internal topic's.
	if n := tb.broker().topics.TotalPartitions(); n < 3 || !strings.Contains(body, fmt.Sprintf("sluice_partitions %d\n", n)) {
		t.Errorf("partition gauge wrong:\n%s", grepLines(body, "sluice_partitions"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
