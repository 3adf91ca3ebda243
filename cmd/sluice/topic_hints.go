package main

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// checkPartitions refuses partitions the topic does not have before any
// request is sent (the admin client would otherwise report a sharding
// error without naming the partition).
func checkPartitions(topic string, t kadm.TopicDetail, nums []int32) error {
	for _, p := range nums {
		if _, ok := t.Partitions[p]; !ok {
			return fmt.Errorf("partition %d: %s has %d partition(s), 0 to %d", p, topic, len(t.Partitions), len(t.Partitions)-1)
		}
	}
	return nil
}

// trimHint explains a DeleteRecords error, whose response carries a code
// but no message: the offsets a trim may use, or why the topic refuses.
func trimHint(c *cmd, topic string, p int32, err error) string {
	switch {
	case errors.Is(err, kerr.OffsetOutOfRange):
		ctx, cancel := c.deadline()
		defer cancel()
		adm, aerr := c.admin()
		if aerr != nil {
			return ""
		}
		starts, serr := adm.ListStartOffsets(ctx, topic)
		ends, eerr := adm.ListEndOffsets(ctx, topic)
		if serr != nil || eerr != nil {
			return ""
		}
		s, sok := starts.Lookup(topic, p)
		e, eok := ends.Lookup(topic, p)
		if !sok || !eok || s.Err != nil || e.Err != nil {
			return ""
		}
		return fmt.Sprintf(" (the partition holds offsets %d to %d: -o takes an offset up to %d, or end)", s.Offset, e.Offset, e.Offset)
	case errors.Is(err, kerr.PolicyViolation):
		return " (records can be deleted only from topics whose cleanup.policy includes delete)"
	}
	return ""
}

// derefString is *s, or "" for nil.
func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
