package authz

import (
	"strings"
	"testing"
)

// The examples of Kafka's documentation and SslPrincipalMapper tests.
func TestPrincipalRules(t *testing.T) {
	cases := []struct {
		rules, subject, want string
		fail                 bool
	}{
		{"DEFAULT", "CN=alice,OU=eng,O=Acme", "CN=alice,OU=eng,O=Acme", false},
		{"", "CN=alice", "CN=alice", false},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=kafka-svc,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "kafka-svc", false},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=duke,OU=JavaSoft,O=Sun Microsystems", "CN=duke,OU=JavaSoft,O=Sun Microsystems", false},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,DEFAULT", "CN=Duke,OU=JavaSoft,O=Sun,L=Santa Clara,ST=CA,C=US", "duke@javasoft", false},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U", "CN=Duke,OU=JavaSoft,O=Sun,L=Santa Clara,ST=CA,C=US", "DUKE@JAVASOFT", false},
		{"RULE:^CN=([a-z]+)$/$1/", "CN=bob", "bob", false},
		{"RULE:^CN=([a-z]+)$/$1/", "CN=bob,O=x", "", true}, // no rule applies: refused
		{"RULE:^CN=(.*)$/user\\/$1/", "CN=x", "user/x", false},
		{" RULE:^CN=(a)$/$1x/ , DEFAULT ", "CN=a", "ax", false},
	}
	for _, c := range cases {
		pr, err := ParsePrincipalRules(c.rules)
		if err != nil {
			t.Errorf("%q: %v", c.rules, err)
			continue
		}
		got, err := pr.Map(c.subject)
		if c.fail {
			if err == nil || !strings.Contains(err.Error(), "no rule") {
				t.Errorf("%q on %q: got %q %v, want no matching rule", c.rules, c.subject, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q on %q: got %q %v, want %q", c.rules, c.subject, got, err, c.want)
		}
	}
	for _, bad := range []string{"RULE:abc", "RULE:^CN=(.*)$/$1/X", "SOMETHING", "RULE:(?<=x)a/b/"} {
		if _, err := ParsePrincipalRules(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if pr, _ := ParsePrincipalRules("DEFAULT"); !pr.IsDefault() {
		t.Error("DEFAULT is not default")
	}
}
