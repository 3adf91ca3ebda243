package nemesis

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-broker/sluice/test/chaos/history"
	"github.com/sluice-broker/sluice/test/chaos/node"
)

// Second is the other node of a lose-unfsynced-2 step (index): drawn from
// its Pick among the nodes other than its Node.
func Second(s Step, nodes int) int {
	return (s.Node + 1 + int(s.Pick%uint64(nodes-1))) % nodes
}

// loseTwo injects lose-unfsynced-2 (its invoke on s.Node is recorded): both
// nodes SIGKILLed before either is waited for, then each one's data
// directory replaced by its copy as of its last fsyncs. It is recorded as a
// fault of each node, the second one's invoked right after the first's
// completes (both were killed before either completion).
func (n *Nemesis) loseTwo(s Step, role, target string) error {
	a, j := n.Cluster.Nodes[s.Node], Second(s, len(n.Cluster.Nodes))
	b := n.Cluster.Nodes[j]
	err := node.KillTogether(10*time.Second, a, b)
	lost := ""
	if err == nil {
		lost, err = a.RestoreFsynced()
	}
	info := func(nd int, role, target, kind string, err error) {
		text := ""
		if err != nil {
			text = err.Error()
		}
		n.recordOp(history.Op{Type: history.Info, F: s.Fault, Role: role, Target: target, Error: text, Kind: kind}, nd)
	}
	info(s.Node, role, target, fmt.Sprintf("with node %d; %s", j+1, lost), err)
	if err != nil {
		return err
	}
	n.recordOp(history.Op{Type: history.Invoke, F: s.Fault, Target: "second"}, j)
	lost, err = b.RestoreFsynced()
	info(j, "", "second", fmt.Sprintf("with node %d; %s", s.Node+1, lost), err)
	return err
}

// startTwo heals lose-unfsynced-2 (its start invoke on s.Node is recorded):
// both nodes started before either is waited for.
func (n *Nemesis) startTwo(s Step) error {
	a, j := n.Cluster.Nodes[s.Node], Second(s, len(n.Cluster.Nodes))
	b := n.Cluster.Nodes[j]
	errA, errB := a.Start(), b.Start()
	ctx, cancel := context.WithTimeout(context.Background(), n.HealTimeout)
	defer cancel()
	if errA == nil {
		errA = a.WaitHealthy(ctx)
	}
	n.record(history.Info, history.FStart, s.Node, errString(errA))
	n.record(history.Invoke, history.FStart, j, "")
	if errB == nil {
		errB = b.WaitHealthy(ctx)
	}
	n.record(history.Info, history.FStart, j, errString(errB))
	if errA != nil {
		return errA
	}
	return errB
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
