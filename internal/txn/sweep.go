package txn

import "time"

func (c *Coordinator) all() []*txnMeta {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loading || c.closed {
		return nil
	}
	out := make([]*txnMeta, 0, len(c.txns))
	for _, m := range c.txns {
		out = append(out, m)
	}
	return out
}

// AbortTimedOut aborts every Ongoing transaction older than its timeout,
// bumping its epoch so that its producer is fenced (Kafka's
// abortTimedOutTransactions), and retries the completion of transactions
// whose markers or completion could not be written earlier. The sweep
// armed by Start calls it every AbortInterval.
func (c *Coordinator) AbortTimedOut() {
	now := c.nowMs()
	for _, m := range c.all() {
		m.mu.Lock()
		switch {
		case m.pending || m.completing || m.removed:
			m.mu.Unlock()
		case m.state == Ongoing && m.startMs+int64(m.timeoutMs) < now:
			c.log.Info("txn: aborting timed-out transaction", "transactional_id", m.id,
				"producer_id", m.producerID, "producer_epoch", m.producerEpoch, "timeout_ms", m.timeoutMs)
			code := c.fenceLocked(m)
			m.mu.Unlock()
			if code == 0 {
				c.complete(m, false)
			}
		case m.state == PrepareCommit || m.state == PrepareAbort:
			m.mu.Unlock()
			c.complete(m, false)
		default:
			m.mu.Unlock()
		}
	}
}

// ExpireIDs forgets transactional ids idle (Empty, CompleteCommit or
// CompleteAbort) for longer than transactional.id.expiration.ms, writing a
// tombstone for each. The sweep calls it every ExpireInterval.
func (c *Coordinator) ExpireIDs() {
	limit := c.now().Add(-c.cfg.IDExpiration).UnixMilli()
	for _, m := range c.all() {
		m.mu.Lock()
		if m.pending || m.completing || m.removed || !m.state.expirable() || m.updateMs > limit {
			m.mu.Unlock()
			continue
		}
		m.pending = true
		m.mu.Unlock()
		err := c.write(m.id, nil)
		if err == nil {
			c.mu.Lock()
			if c.txns[m.id] == m {
				delete(c.txns, m.id)
			}
			if c.byPID[m.producerID] == m {
				delete(c.byPID, m.producerID)
			}
			c.mu.Unlock()
		}
		m.mu.Lock()
		m.pending = false
		if m.settled != nil {
			m.settled.Broadcast()
		}
		if err == nil {
			m.removed = true
			m.state = Dead
			c.log.Info("txn: expired transactional id", "transactional_id", m.id,
				"idle", time.Duration(c.nowMs()-m.updateMs)*time.Millisecond)
		}
		m.mu.Unlock()
	}
}
