package security

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-broker/sluice/internal/config"
)

func loginFor(t *testing.T, raw map[string]string) (*OAuthLogin, error) {
	t.Helper()
	cfg, err := config.NewBroker(raw)
	if err != nil {
		t.Fatal(err)
	}
	return NewOAuthLogin(cfg, "CONTROLLER")
}

// TestOAuthLoginClientCredentials: a node's token comes from the token
// endpoint (client credentials grant, basic authentication, the scope) and
// is reused while fresh.
func TestOAuthLoginClientCredentials(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		id, secret, ok := r.BasicAuth()
		if err := r.ParseForm(); err != nil || !ok || id != "node" || secret != "s3cret" ||
			r.Form.Get("grant_type") != "client_credentials" || r.Form.Get("scope") != "cluster" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"access_token": "tok-1", "expires_in": 3600, "token_type": "bearer"})
	}))
	defer srv.Close()
	l, err := loginFor(t, map[string]string{
		"listener.name.controller.sasl.oauthbearer.token.endpoint.url": srv.URL,
		"listener.name.controller.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ` +
			`clientId="node" clientSecret="s3cret" scope="cluster";`,
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if tok, err := l.Token(context.Background()); err != nil || tok != "tok-1" {
			t.Fatalf("token %q %v", tok, err)
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("%d calls to the token endpoint for a fresh token", calls.Load())
	}
	l, err = loginFor(t, map[string]string{
		"sasl.oauthbearer.token.endpoint.url": srv.URL,
		"listener.name.controller.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ` +
			`clientId="node" clientSecret="wrong" scope="cluster";`,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Token(context.Background()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a refused login: %v", err)
	}
}

func TestOAuthLoginUnsecuredAndFile(t *testing.T) {
	l, err := loginFor(t, map[string]string{
		"listener.name.controller.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ` +
			`unsecuredLoginStringClaim_sub="controller";`,
	})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := l.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v, _ := newUnsecuredValidator(nil)
	if ot, err := v.Validate(tok); err != nil || ot.Principal != "controller" {
		t.Fatalf("the unsecured token does not validate: %+v %v", ot, err)
	}
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err = loginFor(t, map[string]string{"sasl.oauthbearer.token.endpoint.url": "file://" + path})
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := l.Token(context.Background()); err != nil || tok != "from-file" {
		t.Fatalf("file token %q %v", tok, err)
	}
	if _, err := loginFor(t, map[string]string{}); err == nil || !strings.Contains(err.Error(), "unsecuredLoginStringClaim_sub") {
		t.Fatalf("no way to get a token: %v", err)
	}
}
