package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDescribeUserSCRAMCredentials(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	ctx := dpCtx(t, 10*time.Second)
	adm := tb.admin()

	all, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil || len(all) != 0 {
		t.Fatalf("describe all: %v %+v", err, all)
	}
	named, err := adm.DescribeUserSCRAMs(ctx, "alice", "bob")
	if err != nil || len(named) != 2 {
		t.Fatalf("describe named: %v %+v", err, named)
	}
	for _, u := range []string{"alice", "bob"} {
		if r := named[u]; !errors.Is(r.Err, kerr.ResourceNotFound) ||
			r.ErrMessage != "Attempt to describe a user credential that does not exist: "+u || len(r.CredInfos) != 0 {
			t.Errorf("%s: %+v", u, r)
		}
	}

	// An empty (not null) list also means all users; a user named twice
	// gets one DUPLICATE_RESOURCE result.
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	req.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{}
	if resp := tb.request(req).(*kmsg.DescribeUserSCRAMCredentialsResponse); resp.ErrorCode != 0 || len(resp.Results) != 0 {
		t.Fatalf("empty list: %+v", resp)
	}
	req.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{{Name: "carol"}, {Name: "dave"}, {Name: "carol"}}
	resp := tb.request(req).(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if resp.ErrorCode != 0 || len(resp.Results) != 2 {
		t.Fatalf("duplicates: %+v", resp)
	}
	if r := resp.Results[0]; r.User != "carol" || r.ErrorCode != kerr.DuplicateResource.Code {
		t.Errorf("carol: %+v", r)
	}
	if r := resp.Results[1]; r.User != "dave" || r.ErrorCode != kerr.ResourceNotFound.Code {
		t.Errorf("dave: %+v", r)
	}
}
