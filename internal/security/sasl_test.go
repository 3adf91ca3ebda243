package security

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin" password="admin-secret"
    user_admin="admin-secret"
    user_alice="alice \"quoted\" secret";`

func TestParseJAAS(t *testing.T) {
	mods, err := ParseJAAS(plainJAAS + ` other.Module optional debug=true;`)
	if err != nil || len(mods) != 2 {
		t.Fatalf("%v %+v", err, mods)
	}
	if m := mods[0]; m.Class != PlainLoginModule || m.Flag != "required" || m.Options["user_alice"] != `alice "quoted" secret` ||
		m.Options["username"] != "admin" {
		t.Errorf("%+v", m)
	}
	if m := mods[1]; m.Class != "other.Module" || m.Flag != "optional" || m.Options["debug"] != "true" {
		t.Errorf("%+v", m)
	}
	for _, bad := range []string{
		``, `x.Y`, `x.Y required a="b"`, `x.Y sometimes;`, `x.Y required a=;`, `x.Y required a="unterminated;`, `= required;`,
	} {
		if _, err := ParseJAAS(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// exchange runs a franz-go client mechanism against a server session.
func exchange(t *testing.T, m sasl.Mechanism, s Session) error {
	t.Helper()
	cs, msg, err := m.Authenticate(context.Background(), "broker:9092")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		reply, done, err := s.Step(msg)
		if err != nil {
			return err
		}
		cdone, next, err := cs.Challenge(reply)
		if err != nil {
			t.Fatalf("client rejected the server: %v", err)
		}
		if done {
			if !cdone {
				t.Fatal("server done before the client")
			}
			return nil
		}
		msg = next
	}
	t.Fatal("exchange did not finish")
	return nil
}

func TestListenerSASL(t *testing.T) {
	cfg := brokerConfig(t, map[string]string{
		"sasl.enabled.mechanisms":                             "PLAIN,SCRAM-SHA-256",
		"listener.name.sasl_ssl.sasl.enabled.mechanisms":      "SCRAM-SHA-512",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJAAS,
	})
	sc, err := ListenerSASL(cfg, "SASL_PLAINTEXT")
	if err != nil || strings.Join(sc.Mechanisms, ",") != "PLAIN,SCRAM-SHA-256" || sc.PlainUsers["admin"] != "admin-secret" {
		t.Fatalf("%v %+v", err, sc)
	}
	if sc, err := ListenerSASL(cfg, "SASL_SSL"); err != nil || strings.Join(sc.Mechanisms, ",") != "SCRAM-SHA-512" || sc.PlainUsers != nil {
		t.Fatalf("%v %+v", err, sc)
	}
	if _, ok := sc.NewSession("SCRAM-SHA-512", nil); ok {
		t.Error("a mechanism not enabled got a session")
	}
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{}, "GSSAPI is not supported"},
		{map[string]string{"sasl.enabled.mechanisms": "PLAIN"}, "no users"},
		{map[string]string{"sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": "x.Y required;"}, "no org.apache.kafka"},
		{map[string]string{"sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": "x.Y required"}, "sasl.jaas.config"},
		{map[string]string{"sasl.enabled.mechanisms": "OAUTHBEARER"}, "OAUTHBEARER"},
	} {
		if _, err := ListenerSASL(brokerConfig(t, tc.props), "SASL_PLAINTEXT"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.props, err, tc.want)
		}
	}
}

func TestPlainSession(t *testing.T) {
	sc := &SASLConfig{Mechanisms: []string{MechPlain}, PlainUsers: map[string]string{"alice": "alice-secret"}}
	s, _ := sc.NewSession(MechPlain, nil)
	if err := exchange(t, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), s); err != nil || s.User() != "alice" {
		t.Fatalf("%v %q", err, s.User())
	}
	for _, tc := range []struct {
		token, want string
	}{
		{"\x00alice\x00wrong", "Invalid username or password"},
		{"\x00bob\x00alice-secret", "Invalid username or password"},
		{"\x00\x00pw", "username not specified"},
		{"\x00alice\x00", "password not specified"},
		{"alice\x00alice-secret", "expected 3 tokens"},
		{"carol\x00alice\x00alice-secret", "authorization id"},
	} {
		s, _ := sc.NewSession(MechPlain, nil)
		_, _, err := s.Step([]byte(tc.token))
		var ae *AuthError
		if !errors.As(err, &ae) || !strings.Contains(ae.Message, tc.want) {
			t.Errorf("%q: %v, want %q", tc.token, err, tc.want)
		}
	}
}

func TestScramSession(t *testing.T) {
	store, err := OpenScramStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	put := func(user, password string, m ScramMechanism, iter int) {
		salt := []byte("salt-" + user)
		sp, err := m.SaltedPassword(password, salt, iter)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Apply([]ScramChange{{User: user, Mechanism: m, Credential: m.NewScramCredential(salt, sp, iter)}}); err != nil {
			t.Fatal(err)
		}
	}
	put("alice", "alice-secret", ScramSHA256, 4096)
	put("alice", "other-secret", ScramSHA512, 8192)
	put("we=ird,name", "pw", ScramSHA256, 4096)
	put("weak", "pw", ScramSHA256, 1000)
	sc := &SASLConfig{Mechanisms: []string{MechScramSHA256, MechScramSHA512}}

	ok := []struct {
		user, pass string
		m          ScramMechanism
		client     sasl.Mechanism
	}{
		{"alice", "alice-secret", ScramSHA256, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()},
		{"alice", "other-secret", ScramSHA512, scram.Auth{User: "alice", Pass: "other-secret"}.AsSha512Mechanism()},
		{"we=ird,name", "pw", ScramSHA256, scram.Auth{User: "we=ird,name", Pass: "pw"}.AsSha256Mechanism()},
	}
	for _, tc := range ok {
		s, _ := sc.NewSession(tc.m.Name, store)
		if err := exchange(t, tc.client, s); err != nil || s.User() != tc.user {
			t.Errorf("%s %s: %v %q", tc.user, tc.m.Name, err, s.User())
		}
	}
	bad := []struct {
		m      ScramMechanism
		client sasl.Mechanism
	}{
		{ScramSHA256, scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism()},
		{ScramSHA512, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()}, // the SHA-256 password
		{ScramSHA256, scram.Auth{User: "nobody", Pass: "pw"}.AsSha256Mechanism()},
		{ScramSHA256, scram.Auth{User: "weak", Pass: "pw"}.AsSha256Mechanism()}, // below Kafka's minimum iterations
		{ScramSHA256, scram.Auth{User: "alice", Pass: "alice-secret", IsToken: true}.AsSha256Mechanism()},
	}
	for i, tc := range bad {
		s, _ := sc.NewSession(tc.m.Name, store)
		err := exchange(t, tc.client, s)
		var ae *AuthError
		if !errors.As(err, &ae) || ae.Message != "Authentication failed during authentication due to invalid credentials with SASL mechanism "+tc.m.Name {
			t.Errorf("case %d: %v", i, err)
		}
	}
	// Malformed messages fail cleanly.
	for _, first := range []string{"", "p=tls-unique,,n=alice,r=abc", "n,,n=alice", "n,,r=abc,n=alice", "n,,n=al=ice,r=x", "n,a=bob,n=alice,r=x"} {
		s, _ := sc.NewSession(MechScramSHA256, store)
		if _, _, err := s.Step([]byte(first)); err == nil {
			t.Errorf("%q accepted", first)
		}
	}
	s, _ := sc.NewSession(MechScramSHA256, store)
	if _, _, err := s.Step([]byte("n,,n=alice,r=abc")); err != nil {
		t.Fatal(err)
	}
	for _, final := range []string{"c=biws,r=abc,p=AAAA", "garbage"} {
		s2 := *s.(*scramSession)
		if _, _, err := s2.Step([]byte(final)); err == nil {
			t.Errorf("final %q accepted", final)
		}
	}
}

func TestScramStorePersists(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenScramStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := ScramSHA256.NewScramCredential([]byte("salt"), []byte("salted-password-of-32-bytes....."), 4096)
	if err := s.Apply([]ScramChange{{User: "alice", Mechanism: ScramSHA256, Credential: c},
		{User: "bob", Mechanism: ScramSHA512, Credential: ScramSHA512.NewScramCredential([]byte("s"), []byte("p"), 5000)}}); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenScramStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s2.Lookup("alice", ScramSHA256); !ok || string(got.StoredKey) != string(c.StoredKey) || got.Iterations != 4096 {
		t.Fatalf("reopened: %+v %v", got, ok)
	}
	if infos, ok := s2.Describe("bob"); !ok || len(infos) != 1 || infos[0].Mechanism.Type != 2 || infos[0].Iterations != 5000 {
		t.Fatalf("describe: %+v", infos)
	}
	if err := s2.Apply([]ScramChange{{User: "bob", Mechanism: ScramSHA512, Delete: true}}); err != nil {
		t.Fatal(err)
	}
	s3, _ := OpenScramStore(dir)
	if u := s3.Users(); len(u) != 1 || u[0] != "alice" {
		t.Fatalf("users after delete: %v", u)
	}
	// The file never holds the password or the salted password.
	data, _ := readFile(t, dir)
	if strings.Contains(data, "salted-password") {
		t.Fatal("salted password stored")
	}
	writeFile(t, dir, `{"version":1,"users":{"x":{"SCRAM-SHA-256":{"salt":"","stored_key":"AAAA","iterations":1}}}}`)
	if _, err := OpenScramStore(dir); err == nil || !strings.Contains(err.Error(), "bad SCRAM-SHA-256 credential") {
		t.Fatalf("corrupt file: %v", err)
	}
	writeFile(t, dir, `{not json`)
	if _, err := OpenScramStore(dir); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("corrupt file: %v", err)
	}
}
