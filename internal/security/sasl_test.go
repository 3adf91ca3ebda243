package security

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-broker/sluice/internal/vfs"
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

// TestParseJAASKafkaTokens checks the tokeniser rules of Kafka's JaasConfig:
// single quotes, comments, Java escapes, control characters as spaces.
func TestParseJAASKafkaTokens(t *testing.T) {
	for _, tc := range []struct {
		text string
		want map[string]string
	}{
		{`x.Y required user_a='a-secret' user_b="b'q";`, map[string]string{"user_a": "a-secret", "user_b": "b'q"}},
		{"x.Y required /* the users */ user_a=\"p\" // admin\n user_b=\"q\"; // end", map[string]string{"user_a": "p", "user_b": "q"}},
		{"x.Y required\r\n\tuser_a=\"p\"\x00;", map[string]string{"user_a": "p"}},
		{`x.Y required a="t\tn\nq\"b\\o\101\0x\477";`, map[string]string{"a": "t\tn\nq\"b\\oA\x00x\x277"}},
		{`x.Y required a='it\'s' b="";`, map[string]string{"a": "it's", "b": ""}},
		{`x.Y required "quoted key"=v;`, map[string]string{"quoted key": "v"}},
		// '/' starts a comment even inside an unquoted word, up to the end
		// of the line (the "; b=q" is part of it).
		{`x.Y required a=p/comment ; b=q` + "\n;", map[string]string{"a": "p"}},
		{`x.Y REQUIRED a=é;`, map[string]string{"a": "é"}},
	} {
		mods, err := ParseJAAS(tc.text)
		if err != nil || len(mods) != 1 {
			t.Errorf("%q: %v %+v", tc.text, err, mods)
			continue
		}
		if !reflect.DeepEqual(mods[0].Options, tc.want) || mods[0].Class != "x.Y" || mods[0].Flag != "required" {
			t.Errorf("%q: got %+v, want options %q", tc.text, mods[0], tc.want)
		}
	}
	for _, bad := range []string{
		"x.Y required a=\"line\nbreak\";", `x.Y required a="ends in \`, `x.Y required a='open;`,
		`x.Y required /* never closed; `, `x.Y required a=/*c*/;`, `x.Y required =v;`,
	} {
		if mods, err := ParseJAAS(bad); err == nil {
			t.Errorf("%q parsed: %+v", bad, mods)
		}
	}
	// Kafka rejects a listener JAAS config with more than one login module.
	_, err := ListenerSASL(brokerConfig(t, map[string]string{
		"sasl.enabled.mechanisms": "PLAIN",
		"sasl.jaas.config":        plainJAAS + ` other.Module optional;`,
	}), "SASL_PLAINTEXT")
	if err == nil || !strings.Contains(err.Error(), "2 login modules") {
		t.Errorf("two login modules: %v", err)
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
		{map[string]string{"sasl.enabled.mechanisms": "GSSAPI,OAUTHBEARER"}, "GSSAPI"},
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
	store, err := OpenScramStore(vfs.OS(), t.TempDir())
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
	s, err := OpenScramStore(vfs.OS(), dir)
	if err != nil {
		t.Fatal(err)
	}
	c := ScramSHA256.NewScramCredential([]byte("salt"), []byte("salted-password-of-32-bytes....."), 4096)
	if err := s.Apply([]ScramChange{{User: "alice", Mechanism: ScramSHA256, Credential: c},
		{User: "bob", Mechanism: ScramSHA512, Credential: ScramSHA512.NewScramCredential([]byte("s"), []byte("p"), 5000)}}); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenScramStore(vfs.OS(), dir)
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
	s3, _ := OpenScramStore(vfs.OS(), dir)
	if u := s3.Users(); len(u) != 1 || u[0] != "alice" {
		t.Fatalf("users after delete: %v", u)
	}
	// The file never holds the password or the salted password.
	data, _ := readFile(t, dir)
	if strings.Contains(data, "salted-password") {
		t.Fatal("salted password stored")
	}
	writeFile(t, dir, `{"version":1,"users":{"x":{"SCRAM-SHA-256":{"salt":"","stored_key":"AAAA","iterations":1}}}}`)
	if _, err := OpenScramStore(vfs.OS(), dir); err == nil || !strings.Contains(err.Error(), "bad SCRAM-SHA-256 credential") {
		t.Fatalf("corrupt file: %v", err)
	}
	writeFile(t, dir, `{not json`)
	if _, err := OpenScramStore(vfs.OS(), dir); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("corrupt file: %v", err)
	}
}

// TestScramUnknownUser checks that an unknown user is answered like a
// known one (a stable salt, Kafka's default iterations) and fails only at
// the proof, with the message of a wrong password.
func TestScramUnknownUser(t *testing.T) {
	store, err := OpenScramStore(vfs.OS(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sc := &SASLConfig{Mechanisms: []string{MechScramSHA256}}
	serverFirst := func(user string) (Session, string) {
		s, _ := sc.NewSession(MechScramSHA256, store)
		reply, done, err := s.Step([]byte("n,,n=" + user + ",r=clientnonce"))
		if err != nil || done {
			t.Fatalf("%s: client-first refused: %v", user, err)
		}
		return s, string(reply)
	}
	saltOf := func(sf string) string {
		for _, a := range strings.Split(sf, ",") {
			if v, ok := strings.CutPrefix(a, "s="); ok {
				return v
			}
		}
		t.Fatalf("no salt in %q", sf)
		return ""
	}
	s, sf := serverFirst("nobody")
	if !strings.HasPrefix(sf, "r=clientnonce") || !strings.HasSuffix(sf, ",i=4096") {
		t.Errorf("server-first %q", sf)
	}
	if _, sf2 := serverFirst("nobody"); saltOf(sf2) != saltOf(sf) {
		t.Errorf("salt changed between probes: %q %q", sf, sf2)
	}
	if _, sf3 := serverFirst("somebody"); saltOf(sf3) == saltOf(sf) {
		t.Errorf("two unknown users share a salt")
	}
	nonce := strings.TrimPrefix(strings.Split(sf, ",")[0], "r=")
	_, _, err = s.Step([]byte("c=biws,r=" + nonce + ",p=" + base64.StdEncoding.EncodeToString(make([]byte, 32))))
	var ae *AuthError
	if !errors.As(err, &ae) || ae.Message != "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256" ||
		!strings.Contains(ae.Detail, "no SCRAM-SHA-256 credential") {
		t.Errorf("final: %v", err)
	}
}

// TestScramReplay checks that a client-final message works once: neither
// again on its session nor on another one.
func TestScramReplay(t *testing.T) {
	store, err := OpenScramStore(vfs.OS(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	salt := []byte("salt")
	sp, _ := ScramSHA256.SaltedPassword("pw", salt, 4096)
	if err := store.Apply([]ScramChange{{User: "alice", Mechanism: ScramSHA256, Credential: ScramSHA256.NewScramCredential(salt, sp, 4096)}}); err != nil {
		t.Fatal(err)
	}
	sc := &SASLConfig{Mechanisms: []string{MechScramSHA256}}
	client := scram.Auth{User: "alice", Pass: "pw"}.AsSha256Mechanism()
	cs, first, _ := client.Authenticate(context.Background(), "b:1")
	s, _ := sc.NewSession(MechScramSHA256, store)
	sf, _, err := s.Step(first)
	if err != nil {
		t.Fatal(err)
	}
	_, final, err := cs.Challenge(sf)
	if err != nil {
		t.Fatal(err)
	}
	if _, done, err := s.Step(final); err != nil || !done {
		t.Fatalf("final: %v %v", done, err)
	}
	if _, _, err := s.Step(final); err == nil {
		t.Error("client-final accepted twice on one session")
	}
	s2, _ := sc.NewSession(MechScramSHA256, store)
	if _, _, err := s2.Step(first); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s2.Step(final); err == nil {
		t.Error("client-final of another session accepted")
	}
	// A nonce must be printable ASCII.
	s3, _ := sc.NewSession(MechScramSHA256, store)
	if _, _, err := s3.Step([]byte("n,,n=alice,r=ab\x01c")); err == nil {
		t.Error("control character in the nonce accepted")
	}
}

// TestScramStoreFileMode checks that the credential file is mode 0600 even
// when a stale temporary file with a wider mode was left behind, and that
// a symlink in its place is not written through.
func TestScramStoreFileMode(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenScramStore(vfs.OS(), dir)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, ScramCredentialsFile+".tmp")
	if err := os.WriteFile(tmp, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(tmp, 0o644) // whatever the umask
	c := ScramSHA256.NewScramCredential([]byte("salt"), []byte("sp"), 4096)
	if err := s.Apply([]ScramChange{{User: "alice", Mechanism: ScramSHA256, Credential: c}}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, ScramCredentialsFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credential file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep"), 0o600)
	if err := os.Symlink(victim, tmp); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply([]ScramChange{{User: "bob", Mechanism: ScramSHA256, Credential: c}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatalf("wrote through a symlink: %q", b)
	}
	if s2, err := OpenScramStore(vfs.OS(), dir); err != nil || len(s2.Users()) != 2 {
		t.Fatalf("reopen: %v", err)
	}
}

// librdkafka before 2.6.1 sends its client nonce twice in the client-final
// message (r=<client nonce><client nonce + server nonce>); that form is
// accepted, as Kafka 3.8.1-3.9 did, and any other prefix is not.
func TestScramOldLibrdkafkaNonce(t *testing.T) {
	store, err := OpenScramStore(vfs.OS(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := ScramSHA256
	salt := []byte("salty")
	sp, _ := m.SaltedPassword("pw", salt, 4096)
	if err := store.Apply([]ScramChange{{User: "alice", Mechanism: m, Credential: m.NewScramCredential(salt, sp, 4096)}}); err != nil {
		t.Fatal(err)
	}
	sc := &SASLConfig{Mechanisms: []string{MechScramSHA256}}
	final := func(prefix string) error {
		s, _ := sc.NewSession(MechScramSHA256, store)
		const clientNonce = "fyko+d2lbbFgONRv9qkxdawL"
		bare := "n=alice,r=" + clientNonce
		sf, _, err := s.Step([]byte("n,," + bare))
		if err != nil {
			t.Fatal(err)
		}
		full := strings.TrimPrefix(strings.Split(string(sf), ",")[0], "r=")
		withoutProof := "c=biws,r=" + prefix + full
		authMessage := bare + "," + string(sf) + "," + withoutProof
		clientKey := m.hmac(sp, "Client Key")
		sig := m.hmac(m.digest(clientKey), authMessage)
		proof := make([]byte, len(sig))
		for i := range sig {
			proof[i] = clientKey[i] ^ sig[i]
		}
		_, _, err = s.Step([]byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)))
		return err
	}
	if err := final(""); err != nil {
		t.Fatalf("RFC 5802 nonce refused: %v", err)
	}
	if err := final("fyko+d2lbbFgONRv9qkxdawL"); err != nil {
		t.Fatalf("the doubled client nonce of librdkafka < 2.6.1 refused: %v", err)
	}
	if err := final("somethingelse"); err == nil {
		t.Fatal("a nonce with another prefix accepted")
	}
}
