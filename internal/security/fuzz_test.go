package security

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/sluice-broker/sluice/internal/vfs"
)

// The fuzz targets below run their seeds (f.Add and testdata/fuzz) in
// every `go test`; explore further with, e.g.,
// go test ./internal/security -run '^$' -fuzz FuzzScramSession -fuzztime 30s

// checkAuthError fails unless err is nil or an *AuthError (what the
// SaslAuthenticate handler turns into a client message).
func checkAuthError(t *testing.T, err error) {
	t.Helper()
	var ae *AuthError
	if err != nil && !errors.As(err, &ae) {
		t.Fatalf("error %v is not an *AuthError", err)
	}
}

func FuzzPlainSession(f *testing.F) {
	for _, s := range []string{"\x00alice\x00alice-secret", "alice\x00alice\x00alice-secret", "\x00\x00", "", "\x00alice", "a\x00b\x00c\x00d"} {
		f.Add([]byte(s))
	}
	sc := &SASLConfig{Mechanisms: []string{MechPlain}, PlainUsers: map[string]string{"alice": "alice-secret"}}
	f.Fuzz(func(t *testing.T, token []byte) {
		s, _ := sc.NewSession(MechPlain, nil)
		_, done, err := s.Step(token)
		checkAuthError(t, err)
		if done != (err == nil) {
			t.Fatalf("done %v with err %v", done, err)
		}
		if done && (s.User() != "alice" || !bytes.HasSuffix(token, []byte("\x00alice\x00alice-secret"))) {
			t.Fatalf("%q authenticated as %q", token, s.User())
		}
	})
}

// FuzzScramSession feeds a client-first and a client-final message to a
// SCRAM-SHA-256 session; "%NONCE%" in the final message stands for the
// nonce of the server-first reply, so that the fuzzer gets past the nonce
// check.
func FuzzScramSession(f *testing.F) {
	f.Add([]byte("n,,n=alice,r=abc"), []byte("c=biws,r=%NONCE%,p=AAAA"))
	f.Add([]byte("n,,n=alice,r=abc"), []byte("c=biws,r=%NONCE%,p=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="))
	f.Add([]byte("y,a=alice,n=alice,r=abc,tokenauth=false"), []byte("c=eSxhPWFsaWNlLA==,r=%NONCE%,x=y,p=AAAA"))
	f.Add([]byte("n,,n=we=3Dird=2Cname,r=x"), []byte("garbage"))
	f.Add([]byte("n,,n=nobody,r=abc"), []byte("c=biws,r=%NONCE%,p="))
	f.Add([]byte("p=tls-unique,,n=alice,r=abc"), []byte(""))
	f.Add([]byte("n,,n=al=ice,r=x"), []byte(",p=,p="))
	store, err := OpenScramStore(vfs.OS(), f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	salt := []byte("salt")
	sp, _ := ScramSHA256.SaltedPassword("alice-secret", salt, 4096)
	if err := store.Apply([]ScramChange{
		{User: "alice", Mechanism: ScramSHA256, Credential: ScramSHA256.NewScramCredential(salt, sp, 4096)},
		{User: "we=ird,name", Mechanism: ScramSHA256, Credential: ScramSHA256.NewScramCredential(salt, sp, 4096)},
	}); err != nil {
		f.Fatal(err)
	}
	sc := &SASLConfig{Mechanisms: []string{MechScramSHA256}}
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s, _ := sc.NewSession(MechScramSHA256, store)
		reply, done, err := s.Step(first)
		checkAuthError(t, err)
		if done {
			t.Fatal("done after the client-first message")
		}
		if err != nil {
			return
		}
		nonce, _, _ := strings.Cut(strings.TrimPrefix(string(reply), "r="), ",")
		final = bytes.ReplaceAll(final, []byte("%NONCE%"), []byte(nonce))
		_, done, err = s.Step(final)
		checkAuthError(t, err)
		if done {
			// Only the password proves a user; the fuzzer does not know it.
			t.Fatalf("authenticated as %q by %q / %q", s.User(), first, final)
		}
		if _, done, err := s.Step(final); done || err == nil {
			t.Fatal("a third message was accepted")
		}
	})
}

func FuzzSaslName(f *testing.F) {
	for _, s := range []string{"alice", "a=2Cb=3Dc", "=", "=2", "=2c", "==3D", "é,="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := saslName(s); err != nil {
			return
		}
		// Escaping any name and decoding it gives the name back.
		esc := strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s)
		if got, err := saslName(esc); err != nil || got != s {
			t.Fatalf("saslName(%q) = %q, %v", esc, got, err)
		}
	})
}

// FuzzParseJAAS checks that the parser never panics and that what it
// accepts, written back with every name and value quoted, parses the same.
func FuzzParseJAAS(f *testing.F) {
	for _, s := range []string{
		plainJAAS,
		`x.Y required a='b' c="d\"e" /* c */ f=g; // x`,
		"x.Y optional a=\"\\101\\477\\n\" b=c;\nz.W sufficient;",
		`x.Y required a=`, `x.Y required a="\`, `/* x.Y`, `;`, `x.Y required a=/ ;`,
	} {
		f.Add(s)
	}
	quote := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`)
	f.Fuzz(func(t *testing.T, text string) {
		mods, err := ParseJAAS(text)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, m := range mods {
			switch m.Flag {
			case "required", "requisite", "sufficient", "optional":
			default:
				t.Fatalf("flag %q accepted", m.Flag)
			}
			b.WriteString(`"` + quote.Replace(m.Class) + `" ` + m.Flag)
			for k, v := range m.Options {
				b.WriteString(` "` + quote.Replace(k) + `"="` + quote.Replace(v) + `"`)
			}
			b.WriteString(";\n")
		}
		again, err := ParseJAAS(b.String())
		if err != nil || len(again) != len(mods) {
			t.Fatalf("%q → %q: %v", text, b.String(), err)
		}
		for i := range mods {
			if again[i].Class != mods[i].Class || len(again[i].Options) != len(mods[i].Options) {
				t.Fatalf("%q → %q: %+v, want %+v", text, b.String(), again[i], mods[i])
			}
			for k, v := range mods[i].Options {
				if again[i].Options[k] != v {
					t.Fatalf("%q → %q: option %q = %q, want %q", text, b.String(), k, again[i].Options[k], v)
				}
			}
		}
	})
}
