package broker

import (
	"slices"
	"sync"
)

// topicPurges are the data removals of topics a cluster node's publish
// deleted: the logs are detached (renamed) by publish and their files
// removed in the background, so that a slow removal holds up no later
// image (other topics' creations, leadership changes, this broker's own
// heartbeats). DeleteTopics on this broker answers once they are done.
type topicPurges struct {
	mu      sync.Mutex
	pending map[string][]chan struct{}
	wg      sync.WaitGroup
}

// start runs purge in the background.
func (p *topicPurges) start(name string, purge func()) {
	done := make(chan struct{})
	p.mu.Lock()
	if p.pending == nil {
		p.pending = map[string][]chan struct{}{}
	}
	p.pending[name] = append(p.pending[name], done)
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		purge()
		p.mu.Lock()
		p.pending[name] = slices.DeleteFunc(p.pending[name], func(c chan struct{}) bool { return c == done })
		if len(p.pending[name]) == 0 {
			delete(p.pending, name)
		}
		p.mu.Unlock()
		close(done)
	}()
}

// waiter returns a func that waits for the removals of name started so far.
func (p *topicPurges) waiter(name string) func() {
	p.mu.Lock()
	chans := slices.Clone(p.pending[name])
	p.mu.Unlock()
	return func() {
		for _, c := range chans {
			<-c
		}
	}
}

// wait waits for every removal started.
func (p *topicPurges) wait() { p.wg.Wait() }
