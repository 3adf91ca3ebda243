package security

import (
	"testing"
	"time"

	"github.com/sluice-broker/sluice/internal/security/oauthtest"
)

// sasl.oauthbearer.clock.skew.seconds is the slack on exp, iat and nbf:
// a token expired 60 s ago passes with 120 s of skew and fails with 0 s.
func TestJWKSValidatorClockSkewSetting(t *testing.T) {
	key := oauthtest.NewRSA("r1")
	srv := newJWKSServer(t, key)
	expired := key.Sign(oauthtest.Claims("alice", time.Hour, map[string]any{"aud": "sluice", "iss": "https://issuer.example",
		"exp": time.Now().Add(-time.Minute).Unix(), "iat": time.Now().Add(-time.Hour).Unix()}))
	early := key.Sign(oauthtest.Claims("alice", time.Hour, map[string]any{"aud": "sluice", "iss": "https://issuer.example",
		"nbf": time.Now().Add(time.Minute).Unix()}))
	for _, tc := range []struct {
		skew string
		ok   bool
	}{{"0", false}, {"120", true}} {
		cfg := jwksBroker(t, map[string]string{"sasl.oauthbearer.jwks.endpoint.url": srv.URL,
			"sasl.oauthbearer.clock.skew.seconds": tc.skew})
		sc, err := ListenerSASL(cfg, "SASL_PLAINTEXT")
		if err != nil {
			t.Fatal(err)
		}
		for name, tok := range map[string]string{"expired 60 s ago": expired, "valid in 60 s": early} {
			if _, err := sc.OAuth.Validate(tok); (err == nil) != tc.ok {
				t.Errorf("skew %s s, token %s: error %v, want accepted=%v", tc.skew, name, err, tc.ok)
			}
		}
	}
}
