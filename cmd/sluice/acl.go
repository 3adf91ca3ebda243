package main

// "sluice acl": create, list and delete ACLs (CreateAcls, DescribeAcls,
// DeleteAcls), with the flags of Kafka's kafka-acls tool.

import (
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var aclNoun = noun{name: "acl", doc: "manage ACLs (with authorizer.class.name set on the broker)", verbs: []verb{
	{"create", "", "create ACLs: each principal gets each operation on each resource", 0, 0, aclCreate},
	{"list", "", "list ACLs (all, or those of the named resources and principals)", 0, 0, aclList},
	{"delete", "", "delete the ACLs matching the named resources, principals, operations and hosts", 0, 0, aclDelete},
}}

// stringsFlag is a repeatable string flag.
type stringsFlag []string

func (s *stringsFlag) String() string { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error {
	if v == "" {
		return errors.New("empty value")
	}
	*s = append(*s, v)
	return nil
}

// aclFlags are the flags every acl verb takes.
type aclFlags struct {
	allow, deny, principal, hosts, ops, topics, groups, txnIDs stringsFlag
	cluster                                                    bool
	pattern                                                    string
}

func addACLFlags(fs *flag.FlagSet, filter bool) *aclFlags {
	f := &aclFlags{}
	fs.Var(&f.allow, "allow-principal", "`principal` (User:NAME, or User:* for every one) the ACLs allow (repeatable)")
	fs.Var(&f.deny, "deny-principal", "`principal` the ACLs deny (repeatable)")
	if filter {
		fs.Var(&f.principal, "principal", "`principal` of the ACLs, allowed or denied (repeatable)")
	}
	hostDoc := "client `host` (IP address) the ACLs apply to (repeatable; default *: every host)"
	if filter {
		hostDoc = "client `host` of the ACLs (repeatable; default: any)"
	}
	fs.Var(&f.hosts, "host", hostDoc)
	opDoc := "`operation`: All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite (repeatable)"
	if filter {
		opDoc += "; default: any"
	}
	fs.Var(&f.ops, "operation", opDoc)
	fs.Var(&f.topics, "topic", "`topic` name, or * for every topic (repeatable)")
	fs.Var(&f.groups, "group", "consumer `group` name, or * (repeatable)")
	fs.BoolVar(&f.cluster, "cluster", false, "the cluster resource (kafka-cluster)")
	fs.Var(&f.txnIDs, "transactional-id", "transactional `id`, or * (repeatable)")
	patDoc := "resource pattern `type`: literal or prefixed"
	if filter {
		patDoc = "resource pattern `type`: literal, prefixed, any or match (default: literal when a resource is named)"
	}
	fs.StringVar(&f.pattern, "resource-pattern-type", "", patDoc)
	return f
}

func (f *aclFlags) hasResource() bool {
	return len(f.topics)+len(f.groups)+len(f.txnIDs) > 0 || f.cluster
}

// builder turns the flags into kadm's ACL builder; filter is true for list
// and delete, where an unnamed field matches any value.
func (f *aclFlags) builder(filter bool) (*kadm.ACLBuilder, error) {
	b := kadm.NewACLs()
	var ops []kadm.ACLOperation
	for _, s := range f.ops {
		op, err := kmsg.ParseACLOperation(s)
		if err != nil || op == kmsg.ACLOperationUnknown || op == kmsg.ACLOperationAny && !filter ||
			op == kmsg.ACLOperationCreateTokens || op == kmsg.ACLOperationDescribeTokens {
			return nil, usagef("--operation %q: want one of All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite", s)
		}
		ops = append(ops, op)
	}
	pattern := kadm.ACLPatternLiteral
	switch strings.ToLower(f.pattern) {
	case "", "literal":
		if filter && f.pattern == "" && !f.hasResource() {
			pattern = kadm.ACLPatternAny
		}
	case "prefixed":
		pattern = kadm.ACLPatternPrefixed
	case "any", "match":
		if !filter {
			return nil, usagef("--resource-pattern-type %q: want literal or prefixed", f.pattern)
		}
		pattern = kadm.ACLPatternAny
		if strings.EqualFold(f.pattern, "match") {
			pattern = kadm.ACLPatternMatch
		}
	default:
		return nil, usagef("--resource-pattern-type %q: want literal or prefixed", f.pattern)
	}
	b.ResourcePatternType(pattern)
	for _, p := range append(append(append([]string{}, f.allow...), f.deny...), f.principal...) {
		if i := strings.IndexByte(p, ':'); i <= 0 || i == len(p)-1 {
			return nil, usagef("principal %q: want TYPE:NAME, e.g. User:alice", p)
		}
	}
	if !filter {
		if len(f.allow)+len(f.deny) == 0 {
			return nil, usagef("give --allow-principal or --deny-principal")
		}
		if len(ops) == 0 {
			return nil, usagef("give at least one --operation")
		}
		if !f.hasResource() {
			return nil, usagef("name a resource: --topic, --group, --cluster or --transactional-id")
		}
		hosts := f.hosts
		if len(hosts) == 0 {
			hosts = []string{"*"}
		}
		if len(f.allow) > 0 {
			b.Allow(f.allow...).AllowHosts(hosts...)
		}
		if len(f.deny) > 0 {
			b.Deny(f.deny...).DenyHosts(hosts...)
		}
		b.Operations(ops...)
		b.MaybeTopics(f.topics...).MaybeGroups(f.groups...).MaybeTransactionalIDs(f.txnIDs...).MaybeClusters(f.cluster)
		return b, b.ValidateCreate()
	}
	// A filter: principals given with --principal match either permission.
	allow := append(append([]string{}, f.allow...), f.principal...)
	deny := append(append([]string{}, f.deny...), f.principal...)
	switch {
	case len(allow) == 0 && len(deny) == 0:
		b.Allow().Deny()
	case len(f.principal) == 0 && len(f.allow) > 0 && len(f.deny) == 0:
		b.MaybeAllow(allow...)
	case len(f.principal) == 0 && len(f.deny) > 0 && len(f.allow) == 0:
		b.MaybeDeny(deny...)
	default:
		b.MaybeAllow(allow...).MaybeDeny(deny...)
	}
	if len(f.hosts) == 0 {
		b.AllowHosts().DenyHosts()
	} else {
		b.AllowHosts(f.hosts...).DenyHosts(f.hosts...)
	}
	b.Operations(ops...) // none: any operation
	if f.hasResource() {
		if f.pattern == "" {
			b.ResourcePatternType(kadm.ACLPatternLiteral)
		}
		b.MaybeTopics(f.topics...).MaybeGroups(f.groups...).MaybeTransactionalIDs(f.txnIDs...).MaybeClusters(f.cluster)
	} else {
		b.AnyResource()
	}
	return b, b.ValidateFilter()
}

// aclRow is one ACL as printed.
type aclRow struct{ principal, host, op, perm, typ, name, pattern string }

// dedupACLs drops repeated rows (a filter per permission may match one ACL twice).
func dedupACLs(rows []aclRow) []aclRow {
	seen := map[aclRow]bool{}
	var out []aclRow
	for _, r := range rows {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

func printACLs(c *cmd, rows []aclRow) error {
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		return fmt.Sprint(a.typ, "\x00", a.name, "\x00", a.pattern, "\x00", a.principal, "\x00", a.host, "\x00", a.op, "\x00", a.perm) <
			fmt.Sprint(b.typ, "\x00", b.name, "\x00", b.pattern, "\x00", b.principal, "\x00", b.host, "\x00", b.op, "\x00", b.perm)
	})
	tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE\tNAME\tPATTERN\tPRINCIPAL\tHOST\tOPERATION\tPERMISSION")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.typ, r.name, r.pattern, r.principal, r.host, r.op, r.perm)
	}
	return tw.Flush()
}

func aclCreate(fs *flag.FlagSet) func(*cmd, []string) error {
	f := addACLFlags(fs, false)
	return func(c *cmd, _ []string) error {
		b, err := f.builder(false)
		if err != nil {
			return err
		}
		adm, err := c.admin()
		if err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			return err
		}
		var rows []aclRow
		var errs []error
		for _, r := range res {
			if r.Err != nil {
				errs = append(errs, fmt.Errorf("%s %s %s on %s %s: %w", r.Permission, r.Principal, r.Operation, r.Type, r.Name, withMessage(r.Err, r.ErrMessage)))
				continue
			}
			rows = append(rows, aclRow{r.Principal, r.Host, r.Operation.String(), r.Permission.String(), r.Type.String(), r.Name, r.Pattern.String()})
		}
		rows = dedupACLs(rows)
		if len(rows) > 0 {
			fmt.Fprintf(c.stdout, "created %d ACL(s)\n", len(rows))
			if err := printACLs(c, rows); err != nil {
				return err
			}
		}
		return errors.Join(errs...)
	}
}

func aclList(fs *flag.FlagSet) func(*cmd, []string) error {
	f := addACLFlags(fs, true)
	return func(c *cmd, _ []string) error {
		b, err := f.builder(true)
		if err != nil {
			return err
		}
		adm, err := c.admin()
		if err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		res, err := adm.DescribeACLs(ctx, b)
		if err != nil {
			return err
		}
		var rows []aclRow
		for _, r := range res {
			if r.Err != nil {
				return withMessage(r.Err, r.ErrMessage)
			}
			for _, d := range r.Described {
				rows = append(rows, aclRow{d.Principal, d.Host, d.Operation.String(), d.Permission.String(), d.Type.String(), d.Name, d.Pattern.String()})
			}
		}
		return printACLs(c, dedupACLs(rows))
	}
}

func aclDelete(fs *flag.FlagSet) func(*cmd, []string) error {
	f := addACLFlags(fs, true)
	return func(c *cmd, _ []string) error {
		if !f.hasResource() {
			return usagef("name a resource: --topic, --group, --cluster or --transactional-id")
		}
		b, err := f.builder(true)
		if err != nil {
			return err
		}
		adm, err := c.admin()
		if err != nil {
			return err
		}
		ctx, cancel := c.deadline()
		defer cancel()
		res, err := adm.DeleteACLs(ctx, b)
		if err != nil {
			return err
		}
		var rows []aclRow
		var errs []error
		for _, r := range res {
			if r.Err != nil {
				errs = append(errs, withMessage(r.Err, r.ErrMessage))
				continue
			}
			for _, d := range r.Deleted {
				if d.Err != nil {
					errs = append(errs, withMessage(d.Err, d.ErrMessage))
					continue
				}
				rows = append(rows, aclRow{d.Principal, d.Host, d.Operation.String(), d.Permission.String(), d.Type.String(), d.Name, d.Pattern.String()})
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		rows = dedupACLs(rows)
		if len(rows) == 0 {
			fmt.Fprintln(c.stdout, "no ACL matched")
			return nil
		}
		fmt.Fprintf(c.stdout, "deleted %d ACL(s)\n", len(rows))
		return printACLs(c, rows)
	}
}
