package authz

import (
	"sync"
	"time"
)

// Auditor rate-limits the audit lines of denials: at most one per
// (principal, resource, operation) per Interval.
type Auditor struct {
	Interval time.Duration
	Now      func() time.Time // time.Now if nil

	mu      sync.Mutex
	last    map[auditKey]time.Time
	pruneAt int // the map's size at which old entries are next forgotten
}

// auditPruneMin is the smallest map the Auditor prunes.
const auditPruneMin = 4096

type auditKey struct {
	principal string
	rt        ResourceType
	name      string
	op        Operation
}

// Allow reports whether a denial should be logged now, and records it.
func (a *Auditor) Allow(principal string, op Operation, rt ResourceType, name string) bool {
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	t := now()
	k := auditKey{principal, rt, name, op}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last == nil {
		a.last = map[auditKey]time.Time{}
	}
	if prev, ok := a.last[k]; ok && t.Sub(prev) < a.Interval {
		return false
	}
	// Forget old entries now and then so the map stays small. The next
	// pruning waits until the map has doubled, so a client denied on many
	// distinct resources within one interval costs amortized constant time
	// per denial, not a scan of the whole map each.
	if len(a.last) >= max(a.pruneAt, auditPruneMin) {
		for k2, p := range a.last {
			if t.Sub(p) >= a.Interval {
				delete(a.last, k2)
			}
		}
		a.pruneAt = 2 * len(a.last)
	}
	a.last[k] = t
	return true
}
