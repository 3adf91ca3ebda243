package security

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/security/oauthtest"
)

func firstMessage(token string, ext ...string) []byte {
	s := "n,,\x01auth=Bearer " + token + "\x01"
	for _, e := range ext {
		s += e + "\x01"
	}
	return []byte(s + "\x01")
}

func TestOAuthFirstMessage(t *testing.T) {
	m, err := parseOAuthFirstMessage([]byte("n,a=alice=2Cx,\x01auth=bearer abc.def.\x01traceId=42\x01\x01"))
	if err != nil || m.token != "abc.def." || m.authzid != "alice,x" || m.extensions["traceId"] != "42" || len(m.extensions) != 1 {
		t.Fatalf("%+v %v", m, err)
	}
	for _, bad := range []string{
		"", "y,,\x01auth=Bearer a\x01\x01", "n,,\x01\x01", "n,,\x01ext=1\x01\x01", "n,,\x01auth=Basic abc\x01\x01",
		"n,,\x01auth=Bearer a b\x01\x01", "n,,\x01auth=Bearer a\x01", "n,,\x01auth=Bearer a\x01bad_key=1\x01\x01",
		"n,x=y,\x01auth=Bearer a\x01\x01",
	} {
		if _, err := parseOAuthFirstMessage([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestUnsecuredValidator(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	v, err := newUnsecuredValidator(map[string]string{"unsecuredValidatorRequiredScope": "read write",
		"unsecuredValidatorAllowableClockSkewMs": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	v.Now = func() time.Time { return now }
	ok := map[string]any{"sub": "alice", "iat": now.Unix() - 60, "exp": now.Unix() + 60, "scope": "read write admin"}
	tok, err := v.Validate(oauthtest.Unsecured(ok))
	if err != nil || tok.Principal != "alice" || !tok.Expiry.Equal(now.Add(time.Minute)) {
		t.Fatalf("%+v %v", tok, err)
	}
	with := func(k string, val any) map[string]any {
		c := map[string]any{}
		for a, b := range ok {
			c[a] = b
		}
		if val == nil {
			delete(c, k)
		} else {
			c[k] = val
		}
		return c
	}
	for name, tc := range map[string]struct {
		token, status string
	}{
		"expired":      {oauthtest.Unsecured(with("exp", now.Unix()-2)), "invalid_token"},
		"no exp":       {oauthtest.Unsecured(with("exp", nil)), "invalid_token"},
		"no sub":       {oauthtest.Unsecured(with("sub", nil)), "invalid_token"},
		"sub number":   {oauthtest.Unsecured(with("sub", 7)), "invalid_token"},
		"iat future":   {oauthtest.Unsecured(with("iat", now.Unix()+5)), "invalid_token"},
		"scope":        {oauthtest.Unsecured(with("scope", []any{"read"})), "insufficient_scope"},
		"signed":       {oauthtest.Unsecured(ok) + "c2ln", "invalid_token"},
		"two parts":    {"abc.def", "invalid_token"},
		"alg RS256":    {"eyJhbGciOiJSUzI1NiJ9." + strings.Split(oauthtest.Unsecured(ok), ".")[1] + ".", "invalid_token"},
		"not base64":   {"!!.!!.", "invalid_token"},
		"exp not num":  {oauthtest.Unsecured(with("exp", "soon")), "invalid_token"},
		"exp <= iat":   {oauthtest.Unsecured(with("exp", now.Unix()-60)), "invalid_token"},
		"empty claims": {"eyJhbGciOiJub25lIn0..", "invalid_token"},
	} {
		_, err := v.Validate(tc.token)
		var oe *OAuthError
		if !errors.As(err, &oe) || oe.Status != tc.status {
			t.Errorf("%s: %v, want %s", name, err, tc.status)
		}
	}
	// The skew lets a just-expired token through.
	if _, err := v.Validate(oauthtest.Unsecured(with("exp", float64(now.Unix())-0.5))); err != nil {
		t.Errorf("within skew: %v", err)
	}
}

// TestOAuthSessionErrorFlow: a bad token gets the RFC 7628 error JSON as a
// challenge, the client's 0x01 then fails the exchange with that JSON.
func TestOAuthSessionErrorFlow(t *testing.T) {
	v, _ := newUnsecuredValidator(nil)
	s := newOAuthSession(v)
	reply, done, err := s.Step(firstMessage(oauthtest.Unsecured(map[string]any{"sub": "bob", "exp": 1})))
	if err != nil || done || string(reply) != `{"status":"invalid_token"}` {
		t.Fatalf("%q %v %v", reply, done, err)
	}
	_, _, err = s.Step([]byte{1})
	var ae *AuthError
	if !errors.As(err, &ae) || ae.Message != `{"status":"invalid_token"}` {
		t.Fatalf("%v", err)
	}

	s = newOAuthSession(v)
	exp := time.Now().Add(time.Hour).Unix()
	reply, done, err = s.Step(firstMessage(oauthtest.Unsecured(map[string]any{"sub": "bob", "exp": exp}), "traceId=abc"))
	if err != nil || !done || len(reply) != 0 || s.User() != "bob" || s.CredentialExpiry().Unix() != exp || s.Extensions()["traceId"] != "abc" {
		t.Fatalf("%q %v %v %s", reply, done, err, s.User())
	}

	s = newOAuthSession(v)
	_, _, err = s.Step([]byte("n,a=alice,\x01auth=Bearer " + oauthtest.Unsecured(map[string]any{"sub": "bob", "exp": exp}) + "\x01\x01"))
	if !errors.As(err, &ae) || !strings.Contains(ae.Message, "authorization id (alice)") {
		t.Fatalf("authzid: %v", err)
	}
	s = newOAuthSession(v)
	if _, _, err = s.Step([]byte("garbage")); !errors.As(err, &ae) || ae.Message != genericOAuthFailure {
		t.Fatalf("garbage: %v", err)
	}
}

// jwksServer serves the JWKS of keys (replaceable) on loopback and counts
// fetches.
type jwksServer struct {
	*httptest.Server
	body    atomic.Pointer[[]byte]
	fetches atomic.Int32
}

func newJWKSServer(t *testing.T, keys ...oauthtest.Key) *jwksServer {
	s := &jwksServer{}
	s.set(keys...)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(*s.body.Load())
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(keys ...oauthtest.Key) {
	b := oauthtest.JWKS(keys...)
	s.body.Store(&b)
}

func jwksBroker(t *testing.T, extra map[string]string) *config.Broker {
	t.Helper()
	raw := map[string]string{
		"sasl.enabled.mechanisms":            "OAUTHBEARER",
		"sasl.oauthbearer.expected.audience": "sluice,other",
		"sasl.oauthbearer.expected.issuer":   "https://issuer.example",
	}
	for k, v := range extra {
		raw[k] = v
	}
	cfg, err := config.NewBroker(raw)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestJWKSValidator(t *testing.T) {
	rsaKey, ecKey, other := oauthtest.NewRSA("r1"), oauthtest.NewEC("e1"), oauthtest.NewRSA("r2")
	srv := newJWKSServer(t, rsaKey, ecKey)
	cfg := jwksBroker(t, map[string]string{"sasl.oauthbearer.jwks.endpoint.url": srv.URL,
		"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "0"})
	sc, err := ListenerSASL(cfg, "SASL_PLAINTEXT")
	if err != nil {
		t.Fatal(err)
	}
	v, ok := sc.OAuth.(*JWKSValidator)
	if !ok {
		t.Fatalf("validator %T", sc.OAuth)
	}
	good := oauthtest.Claims("alice", time.Hour, map[string]any{"aud": []string{"x", "sluice"}, "iss": "https://issuer.example"})
	for _, k := range []oauthtest.Key{rsaKey, ecKey} {
		tok, err := v.Validate(k.Sign(good))
		if err != nil || tok.Principal != "alice" {
			t.Fatalf("%s: %+v %v", k.Alg, tok, err)
		}
	}
	claims := func(mod func(map[string]any)) map[string]any {
		c := oauthtest.Claims("alice", time.Hour, map[string]any{"aud": "sluice", "iss": "https://issuer.example"})
		mod(c)
		return c
	}
	for name, token := range map[string]string{
		"expired":       rsaKey.Sign(claims(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() })),
		"wrong aud":     rsaKey.Sign(claims(func(c map[string]any) { c["aud"] = "someone-else" })),
		"no aud":        rsaKey.Sign(claims(func(c map[string]any) { delete(c, "aud") })),
		"wrong iss":     rsaKey.Sign(claims(func(c map[string]any) { c["iss"] = "https://evil.example" })),
		"no iat":        rsaKey.Sign(claims(func(c map[string]any) { delete(c, "iat") })),
		"no sub":        rsaKey.Sign(claims(func(c map[string]any) { delete(c, "sub") })),
		"nbf future":    rsaKey.Sign(claims(func(c map[string]any) { c["nbf"] = time.Now().Add(time.Hour).Unix() })),
		"unknown kid":   other.Sign(claims(func(map[string]any) {})),
		"alg none":      oauthtest.Unsecured(claims(func(map[string]any) {})),
		"bad signature": rsaKey.Sign(claims(func(map[string]any) {}))[:100] + "x" + rsaKey.Sign(claims(func(map[string]any) {}))[101:],
	} {
		if tok, err := v.Validate(token); err == nil {
			t.Errorf("%s: accepted %+v", name, tok)
		}
	}
	// Within the 30 s default skew.
	if _, err := v.Validate(rsaKey.Sign(claims(func(c map[string]any) {
		c["exp"], c["iat"] = time.Now().Add(-10*time.Second).Unix(), time.Now().Add(-time.Minute).Unix()
	}))); err != nil {
		t.Errorf("within skew: %v", err)
	}
	// A rotated key is fetched when a token names it.
	srv.set(rsaKey, other)
	if _, err := v.Validate(other.Sign(good)); err != nil {
		t.Errorf("rotated key: %v", err)
	}
}

func TestJWKSValidatorConfig(t *testing.T) {
	key := oauthtest.NewEC("e1")
	dir := t.TempDir()
	file := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(file, oauthtest.JWKS(key), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := jwksBroker(t, map[string]string{
		"listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class": JWKSValidatorClass,
		"listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": "file://" + file,
		"listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.sub.claim.name":    "client_id",
		"listener.name.sasl_ssl.oauthbearer.connections.max.reauth.ms":          "60000",
	})
	sc, err := ListenerSASL(cfg, "SASL_SSL")
	if err != nil {
		t.Fatal(err)
	}
	if sc.MaxReauth[MechOAuthBearer] != time.Minute {
		t.Errorf("reauth %v", sc.MaxReauth)
	}
	tok, err := sc.OAuth.Validate(key.Sign(oauthtest.Claims("ignored", time.Hour,
		map[string]any{"client_id": "svc-1", "aud": "sluice", "iss": "https://issuer.example"})))
	if err != nil || tok.Principal != "svc-1" {
		t.Fatalf("%+v %v", tok, err)
	}
	// An unprefixed sasl.server.callback.handler.class is ignored, as in
	// Kafka (it needs the listener and mechanism prefix).
	if _, err := ListenerSASL(jwksBroker(t, map[string]string{"sasl.enabled.mechanisms": "OAUTHBEARER,PLAIN",
		"sasl.jaas.config": PlainLoginModule + ` required user_a="b";`, "sasl.server.callback.handler.class": "com.example.Handler"}),
		"SASL_SSL"); err != nil {
		t.Errorf("unprefixed callback handler class: %v", err)
	}
	// Other listeners get the unsecured validator (no JWKS URL there).
	if sc, err := ListenerSASL(cfg, "SASL_PLAINTEXT"); err != nil {
		t.Fatal(err)
	} else if _, ok := sc.OAuth.(*UnsecuredValidator); !ok {
		t.Errorf("SASL_PLAINTEXT: %T", sc.OAuth)
	}

	for name, extra := range map[string]map[string]string{
		"jwks class without url": {"listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class": JWKSValidatorClass},
		"custom class":           {"listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class": "com.example.Handler"},
		"plain custom class": {"sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": PlainLoginModule + ` required user_a="b";`,
			"listener.name.sasl_ssl.plain.sasl.server.callback.handler.class": "com.example.Handler"},
		"missing file":  {"sasl.oauthbearer.jwks.endpoint.url": "file://" + filepath.Join(dir, "none.json")},
		"ftp url":       {"sasl.oauthbearer.jwks.endpoint.url": "ftp://example.com/jwks"},
		"no audience":   {"sasl.oauthbearer.jwks.endpoint.url": "file://" + file, "sasl.oauthbearer.expected.audience": ""},
		"bad jaas":      {"listener.name.sasl_ssl.oauthbearer.sasl.jaas.config": PlainLoginModule + " required;"},
		"bad skew":      {"listener.name.sasl_ssl.oauthbearer.sasl.jaas.config": OAuthBearerLoginModule + ` required unsecuredValidatorAllowableClockSkewMs="-1";`},
		"reauth number": {"listener.name.sasl_ssl.oauthbearer.connections.max.reauth.ms": "soon"},
	} {
		raw := map[string]string{"sasl.enabled.mechanisms": "OAUTHBEARER", "sasl.oauthbearer.expected.audience": "sluice",
			"sasl.oauthbearer.expected.issuer": "https://issuer.example"}
		for k, v := range extra {
			raw[k] = v
		}
		cfg, err := config.NewBroker(raw)
		if err != nil {
			continue // refused by the config table: fine too
		}
		if _, err := ListenerSASL(cfg, "SASL_SSL"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzOAuthSession feeds arbitrary first messages to an OAUTHBEARER session
// with the unsecured validator: it must fail cleanly or authenticate a
// non-empty principal, never panic.
func FuzzOAuthSession(f *testing.F) {
	f.Add(firstMessage(oauthtest.Unsecured(map[string]any{"sub": "a", "exp": 4102444800})))
	f.Add([]byte("n,a=x,\x01auth=Bearer e30.e30.\x01k=v\x01\x01"))
	f.Add([]byte("n,,\x01auth=Bearer ..\x01\x01"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		v, _ := newUnsecuredValidator(nil)
		s := newOAuthSession(v)
		reply, done, err := s.Step(msg)
		if done && (err != nil || s.User() == "") {
			t.Fatalf("done with %v, user %q", err, s.User())
		}
		if !done && err == nil {
			if _, _, err := s.Step([]byte{1}); err == nil {
				t.Fatalf("error challenge %q then success", reply)
			}
		}
	})
}
