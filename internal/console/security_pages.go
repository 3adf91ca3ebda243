package console

// The SCRAM users page's actions (create or update a user's credential,
// delete a credential) and the ACLs page (list, create, delete). Both act
// as the session's principal, so the broker's ACLs decide: creating and
// deleting need ALTER on the cluster, listing DESCRIBE.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pendingPasswords keeps the password of a user being created between the
// form and its confirmation, so that the confirmation page does not carry
// it: the page has a one-time token instead, valid for the session that
// made it and for five minutes.
type pendingPasswords struct {
	mu sync.Mutex
	m  map[string]pendingPassword
}

type pendingPassword struct {
	session, password string
	expires           time.Time
}

const pendingPasswordTTL = 5 * time.Minute

var pending = &pendingPasswords{m: map[string]pendingPassword{}}

func (pp *pendingPasswords) put(session, password string, now time.Time) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	pp.mu.Lock()
	defer pp.mu.Unlock()
	for k, v := range pp.m {
		if now.After(v.expires) {
			delete(pp.m, k)
		}
	}
	pp.m[tok] = pendingPassword{session: session, password: password, expires: now.Add(pendingPasswordTTL)}
	return tok
}

func (pp *pendingPasswords) take(session, tok string, now time.Time) (string, bool) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	v, ok := pp.m[tok]
	if !ok || v.session != session || now.After(v.expires) {
		return "", false
	}
	delete(pp.m, tok)
	return v.password, true
}

// --- users -------------------------------------------------------------------

func scramMechanism(s string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "", "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, fmt.Errorf("mechanism %q: SCRAM-SHA-256 or SCRAM-SHA-512", s)
}

func (c *Console) createUser(r *http.Request, confirmed bool, cd *confirmData) (string, error) {
	f := r.PostForm
	user := strings.TrimSpace(f.Get("user"))
	if user == "" {
		return "", errors.New("user name required")
	}
	mech, err := scramMechanism(f.Get("mechanism"))
	if err != nil {
		return "", err
	}
	iterations := int32(8192) // as sluice user create (Kafka's kafka-configs: 4096)
	if s := strings.TrimSpace(f.Get("iterations")); s != "" {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 4096 || n > 16384 {
			return "", fmt.Errorf("iterations %q: from 4096 to 16384", s)
		}
		iterations = int32(n)
	}
	s := sessionOf(r)
	now := time.Now()
	password := f.Get("password")
	if tok := f.Get("pending"); tok != "" && password == "" {
		pw, ok := pending.take(s.id, tok, now)
		if !ok {
			return "", errors.New("the confirmation expired: enter the password again")
		}
		password = pw
	}
	if password == "" {
		return "", errors.New("password required")
	}
	what := fmt.Sprintf("set the %s credential of user %s (%d iterations)", mech, user, iterations)
	if !confirmed {
		cd.Summary = strings.ToUpper(what[:1]) + what[1:]
		cd.Details = []string{"An existing credential of this user for " + mech.String() + " is replaced; clients using the old password fail to authenticate."}
		// The confirmation carries a token, not the password.
		fields := cd.Fields[:0]
		for _, fl := range cd.Fields {
			if fl.Name != "password" && fl.Name != "pending" {
				fields = append(fields, fl)
			}
		}
		cd.Fields = append(fields, field{"pending", pending.put(s.id, password, now)})
		return "", nil
	}
	rs, err := s.p.adm.AlterUserSCRAMs(r.Context(), nil, []kadm.UpsertSCRAM{{User: user, Mechanism: mech, Iterations: iterations, Password: password}})
	if err != nil {
		return "", err
	}
	for _, x := range rs {
		if x.Err != nil {
			return "", errors.New(kafkaErr(x.Err, x.ErrMessage))
		}
	}
	return done("/users", what), nil
}

func (c *Console) deleteUser(r *http.Request, confirmed bool, cd *confirmData) (string, error) {
	user := r.PathValue("user")
	mech, err := scramMechanism(r.PostForm.Get("mechanism"))
	if err != nil {
		return "", err
	}
	what := fmt.Sprintf("delete the %s credential of user %s", mech, user)
	if !confirmed {
		cd.Summary = strings.ToUpper(what[:1]) + what[1:]
		cd.Details = []string{"Clients authenticating as " + user + " with " + mech.String() + " fail from now on."}
		return "", nil
	}
	rs, err := sessionOf(r).p.adm.AlterUserSCRAMs(r.Context(), []kadm.DeleteSCRAM{{User: user, Mechanism: mech}}, nil)
	if err != nil {
		return "", err
	}
	for _, x := range rs {
		if x.Err != nil {
			return "", errors.New(kafkaErr(x.Err, x.ErrMessage))
		}
	}
	return done("/users", what), nil
}

// --- ACLs ----------------------------------------------------------------------

// aclRow is one ACL binding as the page shows it (names as Kafka's tools
// print them: TOPIC, LITERAL, READ, ALLOW).
type aclRow struct {
	ResourceType, ResourceName, PatternType string
	Principal, Host, Operation, Permission  string
}

type aclsData struct {
	ACLs []aclRow
	// Disabled is set when the broker has no authorizer (SECURITY_DISABLED).
	Disabled string
	// choices for the create form
	ResourceTypes, PatternTypes, Operations, Permissions []string
}

var (
	aclResourceTypes = []string{"TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID"}
	aclPatternTypes  = []string{"LITERAL", "PREFIXED"}
	aclOperations    = []string{"ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"}
	aclPermissions   = []string{"ALLOW", "DENY"}
)

func (c *Console) acls(ctx context.Context, p *principal) (aclsData, error) {
	d := aclsData{ResourceTypes: aclResourceTypes, PatternTypes: aclPatternTypes, Operations: aclOperations, Permissions: aclPermissions}
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType = kmsg.ACLResourceTypeAny
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	req.Operation = kmsg.ACLOperationAny
	req.PermissionType = kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, p.cl)
	if err != nil {
		return d, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if errors.Is(err, kerr.SecurityDisabled) {
			d.Disabled = kafkaErr(err, strOr(resp.ErrorMessage))
			return d, nil
		}
		return d, errors.New(kafkaErr(err, strOr(resp.ErrorMessage)))
	}
	for _, res := range resp.Resources {
		for _, a := range res.ACLs {
			d.ACLs = append(d.ACLs, aclRow{
				ResourceType: res.ResourceType.String(), ResourceName: res.ResourceName, PatternType: res.ResourcePatternType.String(),
				Principal: a.Principal, Host: a.Host, Operation: a.Operation.String(), Permission: a.PermissionType.String(),
			})
		}
	}
	sort.Slice(d.ACLs, func(i, j int) bool {
		a, b := d.ACLs[i], d.ACLs[j]
		return strings.Join([]string{a.ResourceType, a.ResourceName, a.PatternType, a.Principal, a.Host, a.Operation, a.Permission}, "\x00") <
			strings.Join([]string{b.ResourceType, b.ResourceName, b.PatternType, b.Principal, b.Host, b.Operation, b.Permission}, "\x00")
	})
	return d, nil
}

func strOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func parseEnum[T any](what, s string, names []string, parse func(string) (T, error)) (T, error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	for _, n := range names {
		if n == s {
			return parse(strings.ReplaceAll(n, "_", ""))
		}
	}
	var zero T
	return zero, fmt.Errorf("%s %q: one of %s", what, s, strings.Join(names, ", "))
}

// aclFromForm reads one ACL binding from a form.
func aclFromForm(f url.Values) (aclRow, kmsg.ACLResourceType, kmsg.ACLResourcePatternType, kmsg.ACLOperation, kmsg.ACLPermissionType, error) {
	row := aclRow{
		ResourceType: strings.ToUpper(strings.TrimSpace(f.Get("resource_type"))), ResourceName: strings.TrimSpace(f.Get("resource_name")),
		PatternType: strings.ToUpper(strings.TrimSpace(f.Get("pattern_type"))), Principal: strings.TrimSpace(f.Get("principal")),
		Host: strings.TrimSpace(f.Get("host")), Operation: strings.ToUpper(strings.TrimSpace(f.Get("operation"))),
		Permission: strings.ToUpper(strings.TrimSpace(f.Get("permission"))),
	}
	fail := func(err error) (aclRow, kmsg.ACLResourceType, kmsg.ACLResourcePatternType, kmsg.ACLOperation, kmsg.ACLPermissionType, error) {
		return row, 0, 0, 0, 0, err
	}
	if row.PatternType == "" {
		row.PatternType = "LITERAL"
	}
	if row.Host == "" {
		row.Host = "*"
	}
	rt, err := parseEnum("resource type", row.ResourceType, aclResourceTypes, kmsg.ParseACLResourceType)
	if err != nil {
		return fail(err)
	}
	if rt == kmsg.ACLResourceTypeCluster && row.ResourceName == "" {
		row.ResourceName = "kafka-cluster"
	}
	if row.ResourceName == "" {
		return fail(errors.New("resource name required (* for every one)"))
	}
	pt, err := parseEnum("pattern type", row.PatternType, aclPatternTypes, kmsg.ParseACLResourcePatternType)
	if err != nil {
		return fail(err)
	}
	op, err := parseEnum("operation", row.Operation, aclOperations, kmsg.ParseACLOperation)
	if err != nil {
		return fail(err)
	}
	perm, err := parseEnum("permission", row.Permission, aclPermissions, kmsg.ParseACLPermissionType)
	if err != nil {
		return fail(err)
	}
	if i := strings.IndexByte(row.Principal, ':'); i <= 0 || i == len(row.Principal)-1 {
		return fail(fmt.Errorf("principal %q: want TYPE:NAME, e.g. User:alice (User:* for every user)", row.Principal))
	}
	return row, rt, pt, op, perm, nil
}

func (a aclRow) String() string {
	return fmt.Sprintf("%s %s %s on %s %s (%s) from host %s", a.Permission, a.Principal, a.Operation, a.ResourceType, a.ResourceName, a.PatternType, a.Host)
}

func (c *Console) createACL(r *http.Request, confirmed bool, cd *confirmData) (string, error) {
	row, rt, pt, op, perm, err := aclFromForm(r.PostForm)
	if err != nil {
		return "", err
	}
	if !confirmed {
		cd.Summary = "Create the ACL: " + row.String()
		return "", nil
	}
	req := kmsg.NewPtrCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = rt, row.ResourceName, pt
	cr.Principal, cr.Host, cr.Operation, cr.PermissionType = row.Principal, row.Host, op, perm
	req.Creations = append(req.Creations, cr)
	resp, err := req.RequestWith(r.Context(), sessionOf(r).p.cl)
	if err != nil {
		return "", err
	}
	for _, res := range resp.Results {
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			return "", errors.New(kafkaErr(err, strOr(res.ErrorMessage)))
		}
	}
	return done("/acls", "created the ACL: "+row.String()), nil
}

func (c *Console) deleteACL(r *http.Request, confirmed bool, cd *confirmData) (string, error) {
	row, rt, pt, op, perm, err := aclFromForm(r.PostForm)
	if err != nil {
		return "", err
	}
	if !confirmed {
		cd.Summary = "Delete the ACL: " + row.String()
		return "", nil
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	fl := kmsg.NewDeleteACLsRequestFilter()
	name, principal, host := row.ResourceName, row.Principal, row.Host
	fl.ResourceType, fl.ResourceName, fl.ResourcePatternType = rt, &name, pt
	fl.Principal, fl.Host, fl.Operation, fl.PermissionType = &principal, &host, op, perm
	req.Filters = append(req.Filters, fl)
	resp, err := req.RequestWith(r.Context(), sessionOf(r).p.cl)
	if err != nil {
		return "", err
	}
	n := 0
	for _, res := range resp.Results {
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			return "", errors.New(kafkaErr(err, strOr(res.ErrorMessage)))
		}
		for _, m := range res.MatchingACLs {
			if err := kerr.ErrorForCode(m.ErrorCode); err != nil {
				return "", errors.New(kafkaErr(err, strOr(m.ErrorMessage)))
			}
			n++
		}
	}
	if n == 0 {
		return "", errors.New("no such ACL (already deleted?)")
	}
	return done("/acls", "deleted the ACL: "+row.String()), nil
}

func (c *Console) aclsPage(w http.ResponseWriter, r *http.Request, v *view) error {
	v.Title = "ACLs"
	d, err := c.acls(r.Context(), sessionOf(r).p)
	v.Data = d
	return err
}
