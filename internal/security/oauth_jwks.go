package security

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// jwsAlgorithms are the signature algorithms a JWKS-validated token may use:
// the asymmetric ones (a JWKS publishes public keys). "none" and the HMAC
// algorithms are refused.
var jwsAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// maxJWKSBytes bounds a JWKS document.
const maxJWKSBytes = 1 << 20

// JWKSValidator validates signed JWTs as Kafka's
// OAuthBearerValidatorCallbackHandler does: the signature against a key of
// the JWKS (by kid), exp and iat required, nbf honoured, all with the clock
// skew; the audience (any of the expected ones) and the issuer when
// configured; the principal from the sub claim (or the configured one) and
// the scope from the scope claim. JWS parsing and signature checks are
// go-jose's.
type JWKSValidator struct {
	Keys           *JWKSource
	Audience       []string // sasl.oauthbearer.expected.audience (empty: not checked)
	Issuer         string   // sasl.oauthbearer.expected.issuer ("": not checked)
	ClockSkew      time.Duration
	PrincipalClaim string // sasl.oauthbearer.sub.claim.name
	ScopeClaim     string // sasl.oauthbearer.scope.claim.name
	Now            func() time.Time
}

func (v *JWKSValidator) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// Validate implements TokenValidator.
func (v *JWKSValidator) Validate(token string) (*OAuthToken, error) {
	tok, err := jwt.ParseSigned(token, jwsAlgorithms)
	if err != nil {
		return nil, invalidToken("could not parse the JWS: %v", err)
	}
	if len(tok.Headers) != 1 {
		return nil, invalidToken("expected one signature, got %d", len(tok.Headers))
	}
	h := tok.Headers[0]
	keys := v.Keys.candidates(h.KeyID, h.Algorithm)
	if len(keys) == 0 && v.Keys.refreshForUnknownKey() {
		keys = v.Keys.candidates(h.KeyID, h.Algorithm)
	}
	if len(keys) == 0 {
		return nil, invalidToken("no key in the JWKS for kid %q and alg %s", h.KeyID, h.Algorithm)
	}
	var raw json.RawMessage
	verified := false
	for _, k := range keys {
		if err = tok.Claims(k.Key, &raw); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, invalidToken("signature verification failed (kid %q): %v", h.KeyID, err)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var claims map[string]any
	if err := d.Decode(&claims); err != nil || claims == nil {
		return nil, invalidToken("malformed JWT claims")
	}
	now := v.now()
	if nbf, ok, err := numericClaim(claims, "nbf"); err != nil {
		return nil, invalidToken("%v", err)
	} else if ok && secondsTime(nbf).After(now.Add(v.ClockSkew)) {
		return nil, invalidToken("the JWT is not yet valid (nbf %f)", nbf)
	}
	if v.Issuer != "" {
		if iss, _ := claims["iss"].(string); iss != v.Issuer {
			return nil, invalidToken("issuer (iss) claim %q is not the expected %q", iss, v.Issuer)
		}
	}
	if len(v.Audience) > 0 {
		var aud jwt.Audience
		if a, ok := claims["aud"]; ok {
			b, _ := json.Marshal(a)
			if err := aud.UnmarshalJSON(b); err != nil {
				return nil, invalidToken("malformed audience (aud) claim")
			}
		}
		if !slices.ContainsFunc(v.Audience, aud.Contains) {
			return nil, invalidToken("audience (aud) claim %v has none of the expected %v", []string(aud), v.Audience)
		}
	}
	return checkClaims(claims, v.PrincipalClaim, v.ScopeClaim, nil, v.ClockSkew, now, true)
}

// JWKSource holds the keys of a JWKS endpoint (http, https or file URL),
// fetched at start-up and again every RefreshInterval (in the background,
// the current keys serving meanwhile), and at once when a token names a key
// id the set lacks, at most once per MinForcedRefresh.
type JWKSource struct {
	URL              string
	RefreshInterval  time.Duration
	MinForcedRefresh time.Duration
	Client           *http.Client
	Log              *slog.Logger

	mu         sync.Mutex
	keys       *jose.JSONWebKeySet
	fetched    time.Time // last successful fetch
	forced     time.Time // last fetch forced by an unknown kid
	refreshing bool
}

// NewJWKSource checks the URL and fetches the keys once. A file that cannot
// be read or parsed is an error (a configuration mistake); an unreachable
// http(s) endpoint is logged and retried when tokens arrive.
func NewJWKSource(rawURL string, refresh, minForced time.Duration, log *slog.Logger) (*JWKSource, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("invalid URL %q: %v", rawURL, err)
	}
	switch u.Scheme {
	case "http", "https", "file":
	default:
		return nil, fmt.Errorf("URL %q: the scheme must be http, https or file", rawURL)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &JWKSource{URL: rawURL, RefreshInterval: refresh, MinForcedRefresh: minForced,
		Client: &http.Client{Timeout: 10 * time.Second}, Log: log}
	if err := s.refresh(); err != nil {
		if u.Scheme == "file" {
			return nil, err
		}
		log.Warn("OAUTHBEARER: could not fetch the JWKS at start-up; retrying when tokens arrive", "url", rawURL, "err", err)
	}
	return s, nil
}

func (s *JWKSource) fetch() (*jose.JSONWebKeySet, error) {
	u, err := url.Parse(s.URL)
	if err != nil {
		return nil, err
	}
	var body []byte
	if u.Scheme == "file" {
		body, err = os.ReadFile(u.Path)
		if err != nil {
			return nil, fmt.Errorf("reading the JWKS file: %w", err)
		}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), s.Client.Timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		resp, err := s.Client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("fetching the JWKS: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("fetching the JWKS: HTTP %s", resp.Status)
		}
		body, err = io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
		if err != nil {
			return nil, fmt.Errorf("fetching the JWKS: %w", err)
		}
		if len(body) > maxJWKSBytes {
			return nil, errors.New("the JWKS document is larger than 1 MiB")
		}
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("parsing the JWKS: %w", err)
	}
	if len(set.Keys) == 0 {
		return nil, errors.New("the JWKS holds no usable key")
	}
	return &set, nil
}

// refresh fetches the keys now; on failure the previous keys stay.
func (s *JWKSource) refresh() error {
	set, err := s.fetch()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.keys, s.fetched = set, time.Now()
	s.mu.Unlock()
	return nil
}

// candidates returns the public keys a token signed with alg under kid may
// be checked with; it starts a background refresh when the keys are older
// than RefreshInterval.
func (s *JWKSource) candidates(kid, alg string) []jose.JSONWebKey {
	s.mu.Lock()
	keys := s.keys
	if s.RefreshInterval > 0 && !s.refreshing && time.Since(s.fetched) >= s.RefreshInterval {
		s.refreshing = true
		go func() {
			if err := s.refresh(); err != nil {
				s.Log.Warn("OAUTHBEARER: JWKS refresh failed; keeping the current keys", "url", s.URL, "err", err)
			}
			s.mu.Lock()
			s.refreshing = false
			s.mu.Unlock()
		}()
	}
	s.mu.Unlock()
	if keys == nil {
		return nil
	}
	var out []jose.JSONWebKey
	for _, k := range keys.Keys {
		if kid != "" && k.KeyID != kid {
			continue
		}
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if k.Algorithm != "" && k.Algorithm != alg {
			continue
		}
		if !k.IsPublic() {
			k = k.Public()
		}
		if k.Key == nil {
			continue
		}
		out = append(out, k)
	}
	return out
}

// refreshForUnknownKey fetches the keys now (a token names a key the set
// lacks: the issuer may have rotated its keys) unless that was done less
// than MinForcedRefresh ago; it reports whether new keys were fetched.
func (s *JWKSource) refreshForUnknownKey() bool {
	s.mu.Lock()
	if !s.forced.IsZero() && time.Since(s.forced) < s.MinForcedRefresh {
		s.mu.Unlock()
		return false
	}
	s.forced = time.Now()
	s.mu.Unlock()
	if err := s.refresh(); err != nil {
		s.Log.Warn("OAUTHBEARER: JWKS refresh for an unknown key id failed", "url", s.URL, "err", err)
		return false
	}
	return true
}
