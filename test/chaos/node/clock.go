package node

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ClockControlConfig is the broker config that turns on the test-only
// clock control the clock fault needs (docs/reliability.md).
const ClockControlConfig = "sluice.test.clock.control"

// SetClock moves the node's wall clock offset from the real one (0: back to
// the real clock) through its metrics listener's /test/clock (the node must
// run with sluice.test.clock.control=true).
func (n *Node) SetClock(ctx context.Context, offset time.Duration) error {
	form := url.Values{"offset_ms": {fmt.Sprint(offset.Milliseconds())}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+n.Metrics+"/test/clock", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("clock of node %d: %w", n.ID, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("clock of node %d: %s: %s", n.ID, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}
