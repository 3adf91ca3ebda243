package main

// "sluice quota": list, describe and alter client quotas
// (DescribeClientQuotas, AlterClientQuotas), with the entity flags of
// Kafka's kafka-configs (--user/--client-id/--ip or their defaults).

import (
	"errors"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var quotaNoun = noun{name: "quota", doc: "manage client quotas (byte rates, request share, controller mutations, connection rate)", verbs: []verb{
	{"list", "", "list client quotas (all, or those of entities with the given components)", 0, 0, quotaList},
	{"describe", "", "show the quotas set on exactly one entity", 0, 0, quotaDescribe},
	{"alter", "", "set (--add-config) and remove (--delete-config) quotas of one entity", 0, 0, quotaAlter},
}}

// quotaEntityFlags name an entity as kafka-configs does: --entity-type
// (users, clients, ips) followed by --entity-name NAME or
// --entity-default, once per component.
type quotaEntityFlags struct {
	parts []quotaPart
	err   error
}

type quotaPart struct {
	typ   string
	name  *string
	named bool // --entity-name or --entity-default given
}

type entityTypeFlag struct{ f *quotaEntityFlags }

func (e entityTypeFlag) String() string { return "" }
func (e entityTypeFlag) Set(v string) error {
	typ, ok := map[string]string{"users": "user", "user": "user", "clients": "client-id", "client-id": "client-id",
		"ips": "ip", "ip": "ip"}[strings.ToLower(v)]
	if !ok {
		return fmt.Errorf("want users, clients or ips")
	}
	e.f.parts = append(e.f.parts, quotaPart{typ: typ})
	return nil
}

type entityNameFlag struct{ f *quotaEntityFlags }

func (e entityNameFlag) String() string { return "" }
func (e entityNameFlag) Set(v string) error {
	last, err := e.f.last()
	if err != nil {
		return err
	}
	n := v
	last.name, last.named = &n, true
	return nil
}

type entityDefaultFlag struct{ f *quotaEntityFlags }

func (e entityDefaultFlag) String() string   { return "" }
func (e entityDefaultFlag) IsBoolFlag() bool { return true }
func (e entityDefaultFlag) Set(v string) error {
	if v != "true" {
		return fmt.Errorf("takes no value")
	}
	last, err := e.f.last()
	if err != nil {
		return err
	}
	last.name, last.named = nil, true
	return nil
}

func (f *quotaEntityFlags) last() (*quotaPart, error) {
	if len(f.parts) == 0 || f.parts[len(f.parts)-1].named {
		return nil, fmt.Errorf("give --entity-type first")
	}
	return &f.parts[len(f.parts)-1], nil
}

func addQuotaEntityFlags(fs *flag.FlagSet) *quotaEntityFlags {
	f := &quotaEntityFlags{}
	fs.Var(entityTypeFlag{f}, "entity-type", "entity `type`: users, clients or ips; each followed by --entity-name or --entity-default (repeatable, as kafka-configs)")
	fs.Var(entityNameFlag{f}, "entity-name", "`name` of the entity given by the last --entity-type (a user is the principal's name: alice for User:alice)")
	fs.Var(entityDefaultFlag{f}, "entity-default", "the default entity of the last --entity-type")
	return f
}

func (f *quotaEntityFlags) components() ([]quotaPart, error) {
	for _, p := range f.parts {
		if !p.named {
			return nil, usagef("--entity-type %s needs --entity-name or --entity-default", p.typ)
		}
	}
	return f.parts, nil
}

func entityString(typ []string, names []*string) string {
	var parts []string
	for i, t := range typ {
		n := "<default>"
		if names[i] != nil {
			n = *names[i]
		}
		parts = append(parts, t+"="+n)
	}
	return strings.Join(parts, ", ")
}

func describeQuotas(c *cmd, parts []quotaPart, strict bool) error {
	adm, err := c.admin()
	if err != nil {
		return err
	}
	ctx, cancel := c.deadline()
	defer cancel()
	var comps []kadm.DescribeClientQuotaComponent
	for _, p := range parts {
		mt := kmsg.QuotasMatchTypeExact
		if p.name == nil {
			mt = kmsg.QuotasMatchTypeDefault
		}
		comps = append(comps, kadm.DescribeClientQuotaComponent{Type: p.typ, MatchName: p.name, MatchType: mt})
	}
	res, err := adm.DescribeClientQuotas(ctx, strict, comps)
	if err != nil {
		return err
	}
	type row struct{ entity, key, value string }
	var rows []row
	for _, e := range res {
		var typs []string
		var names []*string
		for _, ec := range e.Entity {
			typs = append(typs, ec.Type)
			names = append(names, ec.Name)
		}
		ent := entityString(typs, names)
		for _, v := range e.Values {
			rows = append(rows, row{ent, v.Key, strconv.FormatFloat(v.Value, 'f', -1, 64)})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].entity != rows[j].entity {
			return rows[i].entity < rows[j].entity
		}
		return rows[i].key < rows[j].key
	})
	tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENTITY\tQUOTA\tVALUE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.entity, r.key, r.value)
	}
	return tw.Flush()
}

func quotaList(fs *flag.FlagSet) func(*cmd, []string) error {
	f := addQuotaEntityFlags(fs)
	return func(c *cmd, _ []string) error {
		parts, err := f.components()
		if err != nil {
			return err
		}
		return describeQuotas(c, parts, false)
	}
}

func quotaDescribe(fs *flag.FlagSet) func(*cmd, []string) error {
	f := addQuotaEntityFlags(fs)
	return func(c *cmd, _ []string) error {
		parts, err := f.components()
		if err != nil {
			return err
		}
		if len(parts) == 0 {
			return usagef("name an entity: --entity-type users|clients|ips with --entity-name NAME or --entity-default")
		}
		return describeQuotas(c, parts, true)
	}
}

func quotaAlter(fs *flag.FlagSet) func(*cmd, []string) error {
	f := addQuotaEntityFlags(fs)
	var add, del stringsFlag
	fs.Var(&add, "add-config", "quotas to set, `key=value`[,key=value...]: producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate, connection_creation_rate (repeatable)")
	fs.Var(&del, "delete-config", "quotas to remove, `key`[,key...] (repeatable)")
	return func(c *cmd, _ []string) error {
		parts, err := f.components()
		if err != nil {
			return err
		}
		if len(parts) == 0 {
			return usagef("name an entity: --entity-type users|clients|ips with --entity-name NAME or --entity-default")
		}
		var ops []kadm.AlterClientQuotaOp
		for _, a := range add {
			for _, kv := range strings.Split(a, ",") {
				k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
				x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if !ok || k == "" || err != nil {
					return usagef("--add-config %q: want key=number", kv)
				}
				ops = append(ops, kadm.AlterClientQuotaOp{Key: strings.TrimSpace(k), Value: x})
			}
		}
		for _, d := range del {
			for _, k := range strings.Split(d, ",") {
				if k = strings.TrimSpace(k); k != "" {
					ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
				}
			}
		}
		if len(ops) == 0 {
			return usagef("give --add-config or --delete-config")
		}
		var ent kadm.ClientQuotaEntity
		var typs []string
		var names []*string
		for _, p := range parts {
			ent = append(ent, kadm.ClientQuotaEntityComponent{Type: p.typ, Name: p.name})
			typs, names = append(typs, p.typ), append(names, p.name)
		}
		adm, err := c.admin()
		if err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: ent, Ops: ops}})
		if err != nil {
			return err
		}
		var errs []error
		for _, r := range res {
			if r.Err != nil {
				errs = append(errs, withMessage(r.Err, r.ErrMessage))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "altered quotas of %s\n", entityString(typs, names))
		return nil
	}
}
