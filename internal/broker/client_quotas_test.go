package broker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDescribeClientQuotas(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	ctx := dpCtx(t, 10*time.Second)
	adm := tb.admin()

	// No quotas: every valid filter matches nothing, without an error.
	for _, comps := range [][]kadm.DescribeClientQuotaComponent{
		nil,
		{{Type: "user", MatchType: kmsg.QuotasMatchTypeAny}},
		{{Type: "user", MatchName: strp("alice"), MatchType: kmsg.QuotasMatchTypeExact},
			{Type: "client-id", MatchType: kmsg.QuotasMatchTypeDefault}},
		{{Type: "ip", MatchType: kmsg.QuotasMatchTypeAny}},
	} {
		for _, strict := range []bool{false, true} {
			got, err := adm.DescribeClientQuotas(ctx, strict, comps)
			if err != nil || len(got) != 0 {
				t.Fatalf("describe %+v strict=%v: %v %+v", comps, strict, err, got)
			}
		}
	}

	// The entry list is nullable; a successful answer carries an empty one
	// (Kafka's admin client and kafka-configs fail on null), every version.
	for v := int16(0); v <= 1; v++ {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Version = v
		rc := tb.raw()
		rc.send(req, 1)
		resp := kmsg.NewPtrDescribeClientQuotasResponse()
		resp.Version = v
		rc.recv(resp)
		if resp.ErrorCode != 0 || resp.Entries == nil || len(resp.Entries) != 0 {
			t.Fatalf("v%d: want an empty, non-null entry list: %+v", v, resp)
		}
	}

	// Invalid filters get Kafka's top-level errors.
	comp := func(typ string, match kmsg.QuotasMatchType, name *string) kmsg.DescribeClientQuotasRequestComponent {
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType, c.MatchType, c.Match = typ, match, name
		return c
	}
	for _, tc := range []struct {
		comps []kmsg.DescribeClientQuotasRequestComponent
		code  int16
		msg   string
	}{
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("", 2, nil)}, kerr.InvalidRequest.Code, "Invalid empty entity type."},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("user", 2, nil), comp("user", 1, nil)}, kerr.InvalidRequest.Code, "cannot appear more than once"},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("group", 2, nil)}, kerr.UnsupportedVersion.Code, "Unsupported entity type group"},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, nil)}, kerr.InvalidRequest.Code, "MATCH_TYPE_EXACT"},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("user", 1, strp("x"))}, kerr.InvalidRequest.Code, "MATCH_TYPE_DEFAULT"},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("user", 2, strp("x"))}, kerr.InvalidRequest.Code, "MATCH_TYPE_SPECIFIED"},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("user", 7, nil)}, kerr.InvalidRequest.Code, "Unknown match type 7"},
		{[]kmsg.DescribeClientQuotasRequestComponent{comp("ip", 2, nil), comp("client-id", 2, nil)}, kerr.InvalidRequest.Code, "IP filter component"},
	} {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Components = tc.comps
		resp := tb.request(req).(*kmsg.DescribeClientQuotasResponse)
		if resp.ErrorCode != tc.code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, tc.msg) || len(resp.Entries) != 0 {
			t.Errorf("filter %+v: got %d %v, want %d %q", tc.comps, resp.ErrorCode, resp.ErrorMessage, tc.code, tc.msg)
		}
	}
}

func TestAlterClientQuotas(t *testing.T) {
	tb := startTestBroker(t, testOptions{})
	ctx := dpCtx(t, 10*time.Second)
	adm := tb.admin()

	user := kadm.ClientQuotaEntity{{Type: "user", Name: strp("alice")}}
	client := kadm.ClientQuotaEntity{{Type: "client-id"}} // the default client id
	pair := kadm.ClientQuotaEntity{{Type: "user", Name: strp("alice")}, {Type: "client-id", Name: strp("app")}}
	ip := kadm.ClientQuotaEntity{{Type: "ip", Name: strp("10.0.0.1")}}
	got, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: user, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1024}, {Key: "request_percentage", Value: 12.5}}},
		{Entity: client, Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 2048}}},
		{Entity: pair, Ops: []kadm.AlterClientQuotaOp{{Key: "controller_mutation_rate", Value: 0.5}}},
		{Entity: ip, Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Remove: true}, {Key: "connection_creation_rate", Value: 5}}},
		{Entity: user, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rat", Value: 1}}},
		{Entity: client, Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 1.5}}},
		{Entity: ip, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 5}}},
		{Entity: user, Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: -1}}},
	})
	if err != nil || len(got) != 8 {
		t.Fatalf("alter: %v %+v", err, got)
	}
	for i := 0; i < 3; i++ {
		if got[i].Err != nil {
			t.Errorf("entry %d: %+v", i, got[i])
		}
	}
	// Results echo the entities in request order; bad entries get Kafka's
	// INVALID_REQUEST messages and change nothing.
	for i, msg := range map[int]string{
		3: "Duplicate quota key",
		4: "Invalid configuration key producer_byte_rat",
		5: "consumer_byte_rate cannot be a fractional value.",
		6: "Invalid configuration key producer_byte_rate",
		7: "Quota consumer_byte_rate must be greater than 0",
	} {
		if !errors.Is(got[i].Err, kerr.InvalidRequest) || !strings.Contains(got[i].ErrMessage, msg) {
			t.Errorf("entry %d: %+v, want %q", i, got[i], msg)
		}
	}
	if len(got[0].Entity) != 1 || *got[0].Entity[0].Name != "alice" || got[1].Entity[0].Name != nil {
		t.Errorf("entities not echoed: %+v", got)
	}

	describe := func(strict bool, comps ...kadm.DescribeClientQuotaComponent) map[string]map[string]float64 {
		t.Helper()
		d, err := adm.DescribeClientQuotas(ctx, strict, comps)
		if err != nil {
			t.Fatalf("describe: %v", err)
		}
		out := map[string]map[string]float64{}
		for _, e := range d {
			var parts []string
			for _, c := range e.Entity {
				n := "<default>"
				if c.Name != nil {
					n = *c.Name
				}
				parts = append(parts, c.Type+"="+n)
			}
			vals := map[string]float64{}
			for _, v := range e.Values {
				vals[v.Key] = v.Value
			}
			out[strings.Join(parts, ",")] = vals
		}
		return out
	}
	all := describe(false)
	if len(all) != 3 || all["user=alice"]["producer_byte_rate"] != 1024 || all["user=alice"]["request_percentage"] != 12.5 ||
		all["client-id=<default>"]["consumer_byte_rate"] != 2048 || all["user=alice,client-id=app"]["controller_mutation_rate"] != 0.5 {
		t.Fatalf("describe all: %+v", all)
	}
	if d := describe(true, kadm.DescribeClientQuotaComponent{Type: "user", MatchName: strp("alice"), MatchType: kmsg.QuotasMatchTypeExact}); len(d) != 1 || d["user=alice"] == nil {
		t.Errorf("strict exact user: %+v", d)
	}
	if d := describe(false, kadm.DescribeClientQuotaComponent{Type: "user", MatchName: strp("alice"), MatchType: kmsg.QuotasMatchTypeExact}); len(d) != 2 {
		t.Errorf("non-strict exact user: %+v", d)
	}
	if d := describe(false, kadm.DescribeClientQuotaComponent{Type: "client-id", MatchType: kmsg.QuotasMatchTypeDefault}); len(d) != 1 || d["client-id=<default>"] == nil {
		t.Errorf("default client: %+v", d)
	}
	if d := describe(false, kadm.DescribeClientQuotaComponent{Type: "client-id", MatchType: kmsg.QuotasMatchTypeAny}); len(d) != 2 {
		t.Errorf("any client: %+v", d)
	}

	// validate_only stores nothing; removing the last key removes the entity.
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.ValidateOnly = true
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: strp("bob")}}
	e.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 10}}
	req.Entries = append(req.Entries, e)
	if resp := tb.request(req).(*kmsg.AlterClientQuotasResponse); len(resp.Entries) != 1 || resp.Entries[0].ErrorCode != 0 {
		t.Fatalf("validate_only: %+v", resp)
	}
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: pair, Ops: []kadm.AlterClientQuotaOp{{Key: "controller_mutation_rate", Remove: true}}},
	}); err != nil {
		t.Fatal(err)
	}
	if d := describe(false); len(d) != 2 || d["user=bob"] != nil {
		t.Fatalf("after validate_only and removal: %+v", d)
	}

	// Stored durably: a restart keeps them.
	tb.restart()
	adm = tb.admin()
	if d := describe(false); len(d) != 2 || d["user=alice"]["producer_byte_rate"] != 1024 {
		t.Fatalf("after restart: %+v", d)
	}

	// Invalid entities get Kafka's answers, validate_only included.
	ent := func(kv ...*string) []kmsg.AlterClientQuotasRequestEntryEntity {
		var out []kmsg.AlterClientQuotasRequestEntryEntity
		for i := 0; i < len(kv); i += 2 {
			out = append(out, kmsg.AlterClientQuotasRequestEntryEntity{Type: *kv[i], Name: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		entity []kmsg.AlterClientQuotasRequestEntryEntity
		msg    string
	}{
		{nil, "Invalid empty client quota entity"},
		{ent(strp("user"), strp("a"), strp("user"), strp("b")), "duplicate entity entry user"},
		{ent(strp("group"), strp("g")), "Unhandled client quota entity type: group"},
		{ent(strp("user"), strp("")), "Empty user not supported"},
		{ent(strp("ip"), nil, strp("user"), nil), "IP entity should not be combined"},
		{ent(strp("ip"), strp("nowhere")), "nowhere is not a valid IP"},
	} {
		for _, validateOnly := range []bool{false, true} {
			req := kmsg.NewPtrAlterClientQuotasRequest()
			req.ValidateOnly = validateOnly
			e := kmsg.NewAlterClientQuotasRequestEntry()
			e.Entity = tc.entity
			e.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Remove: true}}
			req.Entries = append(req.Entries, e)
			resp := tb.request(req).(*kmsg.AlterClientQuotasResponse)
			if len(resp.Entries) != 1 || resp.Entries[0].ErrorCode != kerr.InvalidRequest.Code ||
				resp.Entries[0].ErrorMessage == nil || !strings.Contains(*resp.Entries[0].ErrorMessage, tc.msg) {
				t.Errorf("entity %+v validate_only=%v: %+v", tc.entity, validateOnly, resp.Entries)
			}
		}
	}
}
