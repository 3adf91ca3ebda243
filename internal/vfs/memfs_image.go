package vfs

import "time"

// CrashImage returns a new MemFS holding what Crash with no torn tails
// would leave of m (the durable namespace, each file's synced bytes),
// without touching m: a test can take it while a program runs on m, at
// the moment a power loss would hit, and inspect or reopen the result.
func (m *MemFS) CrashImage() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	img := &MemFS{cur: make(map[string]*memNode, len(m.dur)), dur: make(map[string]*memNode, len(m.dur)),
		limit: -1, now: time.Now}
	copies := map[*memNode]*memNode{}
	for p, n := range m.dur {
		c := copies[n]
		if c == nil {
			c = &memNode{dir: n.dir, mod: n.mod}
			if !n.dir {
				c.data = append([]byte(nil), n.synced...)
				c.synced = append([]byte(nil), n.synced...)
			}
			copies[n] = c
		}
		img.cur[p], img.dur[p] = c, c
	}
	return img
}
