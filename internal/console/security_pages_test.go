package console

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// authzProps turn the authorizer on with the console's anonymous client a
// super user.
var authzProps = map[string]string{
	"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"super.users":           "User:ANONYMOUS",
}

var pendingRE = regexp.MustCompile(`name="pending" value="([0-9a-f]+)"`)

// SCRAM users are created (the confirmation page carries a one-time token,
// never the password), updated and deleted from the users page.
func TestUsersCreateAndDelete(t *testing.T) {
	srv := startBroker(t, nil, nil)
	addr := srv.Addr().String()
	_, adm := adminOf(t, addr)
	_, hs := newTestConsole(t, Options{Bootstrap: []string{addr}, AllowWrites: true})
	b := newBrowser(t, hs.URL)
	tok := b.csrf("/users")
	_, body := b.get("/users")
	mustContain(t, "users page", body, `id="create-user"`, "No SCRAM users.")

	form := url.Values{"csrf": {tok}, "user": {"dora"}, "password": {"dora-secret-pw"}, "mechanism": {"SCRAM-SHA-512"}, "iterations": {"4096"}}
	resp, body := b.postWith("/users", form, map[string]string{"Origin": hs.URL, "Referer": hs.URL + "/users"})
	if resp.StatusCode != 200 {
		t.Fatalf("confirm page: %d\n%s", resp.StatusCode, body)
	}
	mustContain(t, "confirm page", body, "Set the SCRAM-SHA-512 credential of user dora (4096 iterations)", `name="confirm" value="yes"`)
	if strings.Contains(body, "dora-secret-pw") {
		t.Fatalf("the confirmation page holds the password:\n%s", body)
	}
	m := pendingRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no pending token:\n%s", body)
	}
	if us, err := adm.DescribeUserSCRAMs(context.Background()); err != nil || len(us) != 0 {
		t.Fatalf("created before confirmation: %v %v", us, err)
	}
	// Another session cannot use the token.
	other := newBrowser(t, hs.URL)
	otok := other.csrf("/users")
	if resp, body := other.post("/users", url.Values{"csrf": {otok}, "user": {"dora"}, "pending": {m[1]}, "confirm": {"yes"}}); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "expired") {
		t.Fatalf("another session's token: %d\n%s", resp.StatusCode, body)
	}
	confirm := url.Values{"csrf": {tok}, "user": {"dora"}, "mechanism": {"SCRAM-SHA-512"}, "iterations": {"4096"}, "pending": {m[1]}, "confirm": {"yes"}}
	if resp, body := b.post("/users", confirm); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("confirm: %d\n%s", resp.StatusCode, body)
	}
	// The token is single-use.
	if resp, _ := b.post("/users", confirm); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("token reused: %d", resp.StatusCode)
	}
	_, body = b.get("/users")
	mustContain(t, "after create", body, `data-user="dora"`, "SCRAM-SHA-512 (4096 iterations)", `name="mechanism" value="SCRAM-SHA-512"`)

	// Bad input is refused with a reason.
	for _, bad := range []url.Values{
		{"csrf": {tok}, "user": {""}, "password": {"x"}},
		{"csrf": {tok}, "user": {"x"}, "password": {""}},
		{"csrf": {tok}, "user": {"x"}, "password": {"x"}, "mechanism": {"MD5"}},
		{"csrf": {tok}, "user": {"x"}, "password": {"x"}, "iterations": {"12"}},
	} {
		if resp, body := b.post("/users", bad); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `id="error"`) {
			t.Errorf("%v: %d\n%s", bad, resp.StatusCode, body)
		}
	}

	_, body = b.post("/users/dora/delete", url.Values{"csrf": {tok}, "mechanism": {"SCRAM-SHA-512"}})
	mustContain(t, "delete confirm", body, "Delete the SCRAM-SHA-512 credential of user dora")
	if resp, body := b.post("/users/dora/delete", url.Values{"csrf": {tok}, "mechanism": {"SCRAM-SHA-512"}, "confirm": {"yes"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete: %d\n%s", resp.StatusCode, body)
	}
	if us, err := adm.DescribeUserSCRAMs(context.Background()); err != nil || len(us) != 0 {
		t.Fatalf("after delete: %v %v", us, err)
	}
	// Deleting again: the broker's error.
	if resp, body := b.post("/users/dora/delete", url.Values{"csrf": {tok}, "mechanism": {"SCRAM-SHA-512"}, "confirm": {"yes"}}); resp.StatusCode == http.StatusSeeOther || !strings.Contains(body, "RESOURCE_NOT_FOUND") && !strings.Contains(body, "not") {
		t.Fatalf("delete a missing user: %d\n%s", resp.StatusCode, body)
	}

	// Read-only: no forms, and the action is refused.
	rc, ro := newTestConsole(t, Options{Bootstrap: []string{addr}})
	rb := newBrowser(t, ro.URL)
	if _, body := rb.get("/users"); strings.Contains(body, `id="create-user"`) {
		t.Fatal("create form on a read-only console")
	}
	rtok := sessionToken(t, rc, rb)
	for _, path := range []string{"/users", "/users/x/delete", "/acls", "/acls/delete"} {
		if resp, _ := rb.post(path, url.Values{"csrf": {rtok}, "user": {"x"}, "password": {"y"}, "confirm": {"yes"}}); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("read-only %s: %d", path, resp.StatusCode)
		}
	}
}

// ACLs are listed, created and deleted from the ACLs page; without an
// authorizer the page says so.
func TestACLsPage(t *testing.T) {
	srv := startBroker(t, authzProps, nil)
	addr := srv.Addr().String()
	_, hs := newTestConsole(t, Options{Bootstrap: []string{addr}, AllowWrites: true})
	b := newBrowser(t, hs.URL)
	tok := b.csrf("/acls")
	_, body := b.get("/acls")
	mustContain(t, "acls page", body, `id="acl-table"`, "No ACLs.", `id="create-acl"`, "<option>TRANSACTIONAL_ID</option>", "<option>IDEMPOTENT_WRITE</option>")

	acl := url.Values{"csrf": {tok}, "resource_type": {"TOPIC"}, "resource_name": {"orders"}, "pattern_type": {"PREFIXED"},
		"principal": {"User:alice"}, "host": {""}, "operation": {"READ"}, "permission": {"ALLOW"}}
	_, body = b.post("/acls", acl)
	mustContain(t, "create confirm", body, "Create the ACL: ALLOW User:alice READ on TOPIC orders (PREFIXED) from host *")
	confirmed := url.Values{}
	for k, v := range acl {
		confirmed[k] = v
	}
	confirmed.Set("confirm", "yes")
	if resp, body := b.post("/acls", confirmed); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("create: %d\n%s", resp.StatusCode, body)
	}
	cluster := url.Values{"csrf": {tok}, "resource_type": {"CLUSTER"}, "principal": {"User:ops"}, "operation": {"DESCRIBE_CONFIGS"}, "permission": {"DENY"}, "confirm": {"yes"}}
	if resp, body := b.post("/acls", cluster); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("create cluster ACL: %d\n%s", resp.StatusCode, body)
	}
	_, body = b.get("/acls")
	mustContain(t, "after create", body, `data-acl="TOPIC:orders:User:alice:READ"`, "<td>PREFIXED</td>",
		`data-acl="CLUSTER:kafka-cluster:User:ops:DESCRIBE_CONFIGS"`, "<td>DENY</td>")

	for _, bad := range []url.Values{
		{"csrf": {tok}, "resource_type": {"TOPIC"}, "resource_name": {"x"}, "principal": {"alice"}, "operation": {"READ"}, "permission": {"ALLOW"}},
		{"csrf": {tok}, "resource_type": {"BROKER"}, "resource_name": {"x"}, "principal": {"User:a"}, "operation": {"READ"}, "permission": {"ALLOW"}},
		{"csrf": {tok}, "resource_type": {"TOPIC"}, "resource_name": {""}, "principal": {"User:a"}, "operation": {"READ"}, "permission": {"ALLOW"}},
		{"csrf": {tok}, "resource_type": {"TOPIC"}, "resource_name": {"x"}, "principal": {"User:a"}, "operation": {"ANY"}, "permission": {"ALLOW"}},
		{"csrf": {tok}, "resource_type": {"TOPIC"}, "resource_name": {"x"}, "principal": {"User:a"}, "operation": {"READ"}, "permission": {"MAYBE"}},
	} {
		if resp, body := b.post("/acls", bad); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `id="error"`) {
			t.Errorf("%v: %d\n%s", bad, resp.StatusCode, body)
		}
	}

	del := url.Values{"csrf": {tok}, "resource_type": {"TOPIC"}, "resource_name": {"orders"}, "pattern_type": {"PREFIXED"},
		"principal": {"User:alice"}, "host": {"*"}, "operation": {"READ"}, "permission": {"ALLOW"}}
	_, body = b.post("/acls/delete", del)
	mustContain(t, "delete confirm", body, "Delete the ACL: ALLOW User:alice READ on TOPIC orders (PREFIXED)")
	del.Set("confirm", "yes")
	if resp, body := b.post("/acls/delete", del); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete: %d\n%s", resp.StatusCode, body)
	}
	_, body = b.get("/acls")
	if strings.Contains(body, `data-acl="TOPIC:orders:User:alice:READ"`) || !strings.Contains(body, `data-acl="CLUSTER:kafka-cluster:User:ops:DESCRIBE_CONFIGS"`) {
		t.Fatalf("after delete:\n%s", body)
	}
	if resp, body := b.post("/acls/delete", del); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "no such ACL") {
		t.Fatalf("delete again: %d\n%s", resp.StatusCode, body)
	}

	// Without an authorizer.
	plain := startBroker(t, nil, nil)
	_, hs2 := newTestConsole(t, Options{Bootstrap: []string{plain.Addr().String()}, AllowWrites: true})
	_, body = newBrowser(t, hs2.URL).get("/acls")
	mustContain(t, "no authorizer", body, `id="acls-disabled"`, "authorizer.class.name")
}
