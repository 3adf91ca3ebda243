package main

// "sluice cluster add-controller" and "remove-controller": AddRaftVoter and
// RemoveRaftVoter (KIP-853) sent to any broker, which forwards them to the
// active controller.

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func parseNodeID(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("node id %q: want a number of at least 1", s)
	}
	return int32(n), nil
}

func clusterAddController(fs *flag.FlagSet) func(*cmd, []string) error {
	return func(c *cmd, args []string) error {
		id, err := parseNodeID(args[0])
		if err != nil {
			return err
		}
		if _, err := c.admin(); err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		req := kmsg.NewPtrAddRaftVoterRequest()
		req.VoterID, req.TimeoutMillis = id, 30000
		resp, err := req.RequestWith(ctx, c.cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			if resp.ErrorMessage != nil {
				return withMessage(err, *resp.ErrorMessage)
			}
			return err
		}
		fmt.Fprintf(c.stdout, "node %d is a voter of the metadata quorum\n", id)
		return nil
	}
}

func clusterRemoveController(fs *flag.FlagSet) func(*cmd, []string) error {
	return func(c *cmd, args []string) error {
		id, err := parseNodeID(args[0])
		if err != nil {
			return err
		}
		if _, err := c.admin(); err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		req := kmsg.NewPtrRemoveRaftVoterRequest()
		req.VoterID = id
		resp, err := req.RequestWith(ctx, c.cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			if resp.ErrorMessage != nil {
				return withMessage(err, *resp.ErrorMessage)
			}
			return err
		}
		fmt.Fprintf(c.stdout, "node %d is no longer a voter (it stays an observer while it runs)\n", id)
		return nil
	}
}
