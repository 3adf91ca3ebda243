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

	mu   sync.Mutex
	last map[auditKey]time.Time
}

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
	// Forget old entries now and then so the map stays small.
	if len(a.last) >= 4096 {
		for k2, p := range a.last {
			if t.Sub(p) >= a.Interval {
				delete(a.last, k2)
			}
		}
	}
	a.last[k] = t
	return true
}
