package group

import "testing"

// TestTryLoadPartition: the try variants do nothing while the coordinator's
// lock is held (as by a write waiting for its replicas) and load or unload
// once it is free.
func TestTryLoadPartition(t *testing.T) {
	e := newEnv(t, Config{NumPartitions: 4})
	e.c.UnloadPartition(1)
	e.c.mu.Lock()
	if done, _, err := e.c.TryLoadPartition(1); done || err != nil {
		e.c.mu.Unlock()
		t.Fatalf("TryLoadPartition under a held lock: done %v, err %v", done, err)
	}
	if e.c.TryUnloadPartition(2) {
		e.c.mu.Unlock()
		t.Fatal("TryUnloadPartition under a held lock reported done")
	}
	loaded1, loaded2 := e.c.loaded[1], e.c.loaded[2]
	e.c.mu.Unlock()
	if loaded1 || !loaded2 {
		t.Fatalf("a refused try changed the partitions: 1 loaded %v, 2 loaded %v", loaded1, loaded2)
	}
	if done, _, err := e.c.TryLoadPartition(1); !done || err != nil || !e.c.Loaded(1) {
		t.Fatalf("TryLoadPartition with the lock free: done %v, err %v, loaded %v", done, err, e.c.Loaded(1))
	}
	if !e.c.TryUnloadPartition(2) || e.c.Loaded(2) {
		t.Fatal("TryUnloadPartition with the lock free did not unload")
	}
}
