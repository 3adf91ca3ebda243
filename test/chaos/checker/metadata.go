package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sluice-broker/sluice/test/chaos/history"
)

// view is one node's final metadata.
type view struct {
	node      int
	op        int
	topics    map[string]int64 // topic -> partition count
	configs   map[string]int64 // topic -> the metadata workload's config
	acls      map[string]int64 // ACL binding resource name -> bindings held
	clusterID string
}

type alter struct {
	value   int64
	typ     string
	inv, op int
}

// checkMetadata: every acknowledged topic creation and config change is in
// every node's final view, and the views agree.
func (c *state) checkMetadata() {
	created := map[string]int{} // topic -> completion op of an ok creation
	alters := map[string][]alter{}
	var views []view
	var wanted bool                  // the history has metadata operations to check
	aclCreated := map[string]int{}   // binding -> completion op of an ok creation
	aclDeleted := map[string]*pair{} // binding -> its deletion (one at most)
	for _, p := range c.ops {
		op := p.comp
		switch op.F {
		case history.FCreateTopic:
			c.res.Creates[op.Type]++
			wanted = true
			for _, m := range mops(p) {
				if m.F == history.MCreate && op.Type == history.OK && p.done {
					created[m.Key] = op.Index
				}
			}
		case history.FAlterConfig:
			c.res.Alters[op.Type]++
			wanted = true
			for _, m := range mops(p) {
				if m.F == history.MAlter && m.Value != nil {
					typ := op.Type
					if !p.done {
						typ = history.Info
					}
					alters[m.Key] = append(alters[m.Key], alter{value: *m.Value, typ: typ, inv: p.inv.Index, op: op.Index})
				}
			}
		case history.FCreateAcl, history.FDeleteAcl:
			wanted = true
			typ := op.Type
			if !p.done {
				typ = history.Info
			}
			if op.F == history.FCreateAcl {
				c.res.AclCreates[typ]++
			} else {
				c.res.AclDeletes[typ]++
			}
			for _, m := range mops(p) {
				if m.F != history.MAcl {
					continue
				}
				if op.F == history.FCreateAcl && typ == history.OK {
					aclCreated[m.Key] = op.Index
				}
				if op.F == history.FDeleteAcl {
					aclDeleted[m.Key] = &p
				}
			}
		case history.FFinalMetadata:
			node := -1
			if p.inv.Node != nil {
				node = *p.inv.Node
			}
			if !p.done || op.Type != history.OK {
				c.add(IncompleteFinalRead, "metadata", fmt.Sprintf("node %d gave no final metadata: %s", node, op.Error), op.Index)
				continue
			}
			v := view{node: node, op: op.Index, topics: map[string]int64{}, configs: map[string]int64{}, acls: map[string]int64{}, clusterID: op.ClusterID}
			for _, m := range op.Value {
				if m.Value == nil {
					continue
				}
				switch m.F {
				case history.MTopic:
					v.topics[m.Key] = *m.Value
				case history.MConfig:
					v.configs[m.Key] = *m.Value
				case history.MAcl:
					v.acls[m.Key] = *m.Value
				}
			}
			views = append(views, v)
		}
	}
	c.res.FinalViews = len(views)
	if !wanted && len(views) == 0 {
		return
	}
	if len(views) == 0 {
		c.add(IncompleteFinalRead, "metadata", "no node's final metadata was read", nil...)
		return
	}
	sort.Slice(views, func(i, j int) bool { return views[i].node < views[j].node })

	// Acknowledged creations.
	for _, t := range sortedKeys(created) {
		var missing []string
		var ops []int
		for _, v := range views {
			if _, ok := v.topics[t]; !ok {
				missing = append(missing, fmt.Sprint(v.node))
				ops = append(ops, v.op)
			}
		}
		if len(missing) > 0 {
			c.add(MetadataLost, t, fmt.Sprintf("topic %s, whose creation was acknowledged, is missing from the final metadata of node(s) %s (of %d)",
				t, strings.Join(missing, ", "), len(views)), uniq(append([]int{created[t]}, ops...))...)
		}
	}
	// Acknowledged config changes: the last acknowledged value must be what
	// each node holds, unless a change of unknown outcome (which may have
	// been applied at any time) explains it.
	for _, t := range sortedKeys(alters) {
		list := alters[t]
		sort.Slice(list, func(i, j int) bool { return list[i].inv < list[j].inv })
		last := -1
		allowed := map[int64]bool{}
		for i, a := range list {
			switch a.typ {
			case history.OK:
				last = i
			case history.Info:
				allowed[a.value] = true
			}
		}
		if last < 0 {
			continue
		}
		allowed[list[last].value] = true
		for _, v := range views {
			if _, ok := v.topics[t]; !ok {
				continue // a lost topic is named above
			}
			got, ok := v.configs[t]
			if ok && allowed[got] {
				continue
			}
			have := "no value"
			if ok {
				have = fmt.Sprint(got)
			}
			c.add(MetadataLost, t, fmt.Sprintf("config change of topic %s acknowledged (value %d) is lost: node %d holds %s",
				t, list[last].value, v.node, have), list[last].op, v.op)
		}
	}
	c.checkAcls(views, aclCreated, aclDeleted)
	// Convergence: every view like the first.
	c.res.ViewsAgree = true
	ref := views[0]
	for _, v := range views[1:] {
		var ops = []int{ref.op, v.op}
		if v.clusterID != ref.clusterID {
			c.res.ViewsAgree = false
			c.add(MetadataDiverged, "cluster-id", fmt.Sprintf("node %d reports cluster id %q, node %d %q", ref.node, ref.clusterID, v.node, v.clusterID), ops...)
		}
		diverged := func(key, detail string) {
			c.res.ViewsAgree = false
			c.add(MetadataDiverged, key, detail, ops...)
		}
		for _, t := range unionKeys(ref.topics, v.topics) {
			a, inA := ref.topics[t]
			b, inB := v.topics[t]
			switch {
			case !inA:
				diverged(t, fmt.Sprintf("topic %s is in node %d's final metadata, not in node %d's", t, v.node, ref.node))
			case !inB:
				diverged(t, fmt.Sprintf("topic %s is in node %d's final metadata, not in node %d's", t, ref.node, v.node))
			case a != b:
				diverged(t, fmt.Sprintf("topic %s has %d partition(s) at node %d, %d at node %d", t, a, ref.node, b, v.node))
			}
		}
		for _, a := range unionKeys(ref.acls, v.acls) {
			x, inA := ref.acls[a]
			y, inB := v.acls[a]
			if inA != inB || x != y {
				diverged("acl:"+a, fmt.Sprintf("ACL binding %s: %d at node %d, %d at node %d", a, x, ref.node, y, v.node))
			}
		}
		for _, t := range unionKeys(ref.configs, v.configs) {
			a, inA := ref.configs[t]
			b, inB := v.configs[t]
			if inA != inB || a != b {
				_, topicA := ref.topics[t]
				_, topicB := v.topics[t]
				if topicA && topicB { // else the topic difference says it
					diverged(t, fmt.Sprintf("topic %s's config is %s at node %d, %s at node %d", t, cfgText(a, inA), ref.node, cfgText(b, inB), v.node))
				}
			}
		}
	}
}

func cfgText(v int64, ok bool) string {
	if !ok {
		return "unset"
	}
	return fmt.Sprint(v)
}

func unionKeys(a, b map[string]int64) []string {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return sortedKeys(m)
}

// controllers: for each fault of the active controller, when a Metadata
// answer first named a controller again (another node's answer naming
// another controller, or the same node after its heal).
func (c *state) controllers() {
	type obs struct {
		inv, comp int64
		asked     int
		ctrl      int
	}
	var list []obs
	for _, p := range c.ops {
		if p.comp.F != history.FController || !p.done || p.comp.Type != history.OK || p.comp.Controller == nil || p.inv.Node == nil {
			continue
		}
		list = append(list, obs{inv: p.inv.Time, comp: p.comp.Time, asked: *p.inv.Node, ctrl: int(*p.comp.Controller)})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].comp < list[j].comp })
	for i := range c.res.Faults {
		f := &c.res.Faults[i]
		if f.Role != history.RoleController {
			continue
		}
		for _, o := range list {
			if o.inv < int64(f.Start) || o.ctrl < 0 {
				continue
			}
			other := o.asked != f.Node && o.ctrl != f.Node
			back := f.Healed >= 0 && o.inv >= int64(f.Healed)
			if other || back {
				f.NewController, f.NewControllerID = time.Duration(o.comp), o.ctrl
				break
			}
		}
	}
}

// ControllerFailover is the longest time, over the faults of the active
// controller, until clients saw a controller again; false when no such
// fault had one measured.
func (r Result) ControllerFailover() (time.Duration, bool) {
	var longest time.Duration
	found := false
	for _, f := range r.Faults {
		if f.Role == history.RoleController && f.NewController >= 0 {
			found = true
			longest = max(longest, f.NewController-f.Start)
		}
	}
	return longest, found
}

// checkAcls: an ACL binding whose creation was acknowledged is in every
// node's final view unless a deletion of it was tried (and did not
// certainly fail); one whose deletion was acknowledged is in none.
func (c *state) checkAcls(views []view, created map[string]int, deleted map[string]*pair) {
	for _, a := range sortedKeys(created) {
		d := deleted[a]
		switch {
		case d == nil || d.done && d.comp.Type == history.Fail:
			var missing []string
			ops := []int{created[a]}
			for _, v := range views {
				if v.acls[a] == 0 {
					missing = append(missing, fmt.Sprint(v.node))
					ops = append(ops, v.op)
				}
			}
			if len(missing) > 0 {
				c.add(MetadataLost, "acl:"+a, fmt.Sprintf("ACL binding %s, whose creation was acknowledged, is missing from the final view of node(s) %s (of %d)",
					a, strings.Join(missing, ", "), len(views)), uniq(ops)...)
			}
		case d.done && d.comp.Type == history.OK:
			var still []string
			ops := []int{d.comp.Index}
			for _, v := range views {
				if v.acls[a] > 0 {
					still = append(still, fmt.Sprint(v.node))
					ops = append(ops, v.op)
				}
			}
			if len(still) > 0 {
				c.add(MetadataLost, "acl:"+a, fmt.Sprintf("ACL binding %s, whose deletion was acknowledged, is still in the final view of node(s) %s (of %d)",
					a, strings.Join(still, ", "), len(views)), uniq(ops)...)
			}
		}
	}
}
