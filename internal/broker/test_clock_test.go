package broker

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/vfs"
	"github.com/twmb/franz-go/pkg/kgo"
)

func postForm(t *testing.T, u string, form url.Values) (int, string) {
	t.Helper()
	resp, err := http.PostForm(u, form)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 512)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

// TestTestClockControl: without sluice.test.clock.control there is no
// /test/clock; with it, a POST moves the clock the logs read (a
// LogAppendTime produce is stamped with the jumped time), a bad offset is
// 400, and offset 0 puts the clock back.
func TestTestClockControl(t *testing.T) {
	off := startTestBroker(t, testOptions{MetricsListen: "127.0.0.1:0"})
	if code, _, _ := httpGet(t, "http://"+off.srv.MetricsAddr().String()+TestClockPath); code != http.StatusNotFound {
		t.Fatalf("%s without %s: %d, want 404", TestClockPath, testClockControlConfig, code)
	}

	tb := startTestBroker(t, testOptions{MetricsListen: "127.0.0.1:0", Props: map[string]string{testClockControlConfig: "true"}})
	u := "http://" + tb.srv.MetricsAddr().String() + TestClockPath
	if code, body, _ := httpGet(t, u); code != 200 || body != "offset_ms 0\n" {
		t.Fatalf("GET %s: %d %q", TestClockPath, code, body)
	}
	for _, bad := range []string{"", "x", "1.5", "99999999999999"} {
		if code, _ := postForm(t, u, url.Values{"offset_ms": {bad}}); code != http.StatusBadRequest {
			t.Errorf("offset_ms %q: %d, want 400", bad, code)
		}
	}
	const jump = -10 * time.Minute
	if code, body := postForm(t, u, url.Values{"offset_ms": {"-600000"}}); code != 200 || body != "offset_ms -600000\n" {
		t.Fatalf("POST offset_ms=-600000: %d %q", code, body)
	}
	dpTopic(t, tb, "lat", 1, map[string]*string{"message.timestamp.type": strp("LogAppendTime")})
	before := time.Now().Add(jump).UnixMilli()
	p := dpProduce(t, tb, dpProduceReq("lat", 0, dpBatch(t, -1, -1, -1, 2)))
	after := time.Now().Add(jump).UnixMilli()
	if p.ErrorCode != 0 || p.LogAppendTime < before || p.LogAppendTime > after {
		t.Fatalf("LogAppendTime with the clock 10 min back: error %d, append time %d, want within [%d, %d]", p.ErrorCode, p.LogAppendTime, before, after)
	}
	if code, _ := postForm(t, u, url.Values{"offset_ms": {"0"}}); code != 200 {
		t.Fatalf("POST offset_ms=0: %d", code)
	}
	before = time.Now().UnixMilli()
	p = dpProduce(t, tb, dpProduceReq("lat", 0, dpBatch(t, -1, -1, -1, 2)))
	if p.ErrorCode != 0 || p.LogAppendTime < before || p.LogAppendTime > time.Now().UnixMilli() {
		t.Fatalf("LogAppendTime with the clock back: error %d, append time %d (before %d)", p.ErrorCode, p.LogAppendTime, before)
	}
}

// TestFsyncShadowRestart: with sluice.test.fsync.shadow.dir the broker keeps
// a copy of its data directory as of its fsyncs; after a clean shutdown
// (which syncs everything) the copy alone starts a broker holding every
// acknowledged record.
func TestFsyncShadowRestart(t *testing.T) {
	base := t.TempDir()
	data, shadow := filepath.Join(base, "data"), filepath.Join(base, "fsynced")
	tb := startTestBroker(t, testOptions{DataDir: data, Props: map[string]string{testFsyncShadowConfig: shadow}})
	dpTopic(t, tb, "sh", 1, nil)
	for range 3 {
		if p := dpProduce(t, tb, dpProduceReq("sh", 0, dpBatch(t, -1, -1, -1, 2))); p.ErrorCode != 0 {
			t.Fatalf("produce: error %d", p.ErrorCode)
		}
	}
	tb.stop()
	copyDir := vfs.ShadowPath(shadow, data)
	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	if err := vfs.CopyTree(copyDir, data); err != nil {
		t.Fatal(err)
	}
	tb.start()
	if p := dpProduce(t, tb, dpProduceReq("sh", 0, dpBatch(t, -1, -1, -1, 1))); p.ErrorCode != 0 || p.BaseOffset != 6 {
		t.Fatalf("produce after the restart from the copy: error %d, base offset %d, want 6", p.ErrorCode, p.BaseOffset)
	}
}

// TestTestClockTimesOutTransactions: the transaction coordinator reads the
// jumpable clock: a jump forward past an ongoing transaction's timeout
// aborts it (as Apache Kafka's, which compares wall-clock times), and its
// producer cannot commit it.
func TestTestClockTimesOutTransactions(t *testing.T) {
	tb := startTestBroker(t, testOptions{MetricsListen: "127.0.0.1:0", Props: map[string]string{
		testClockControlConfig: "true",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "100",
		"transaction.state.log.num.partitions":                        "1",
	}})
	dpTopic(t, tb, "tx", 1, nil)
	ctx := dpCtx(t, 60*time.Second)
	cl := tb.client(kgo.TransactionalID("jumped"), kgo.TransactionTimeout(5*time.Minute), kgo.DefaultProduceTopic("tx"))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord("v")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if code, body := postForm(t, "http://"+tb.srv.MetricsAddr().String()+TestClockPath, url.Values{"offset_ms": {"600000"}}); code != 200 {
		t.Fatalf("POST offset_ms=600000: %d %q", code, body)
	}
	// (60 s under load at most; the transaction's own timeout, 5 min of
	// the real clock, cannot pass meanwhile.)
	state := ""
	for deadline := time.Now().Add(60 * time.Second); state != "CompleteAbort" && state != "PrepareAbort"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("transaction state %q 60 s after a 10 min jump of a 5 min transaction timeout, want aborted", state)
		}
		if got, err := tb.admin().DescribeTransactions(ctx, "jumped"); err == nil {
			state = got["jumped"].State
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the producer committed a transaction its coordinator aborted on timeout")
	}
}
