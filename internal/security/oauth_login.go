package security

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-broker/sluice/internal/config"
)

// OAuthLogin is a node's own OAUTHBEARER login (the controller listener,
// where a node presents a token to the others), as Kafka's login module
// gets one:
//
//   - with sasl.oauthbearer.token.endpoint.url (listener- or
//     mechanism-prefixed as any sasl.* config): an http(s) URL is asked for
//     a token with the client credentials grant (client id and secret from
//     sasl.oauthbearer.client.credentials.client.id/.secret, else the
//     clientId and clientSecret options of the OAuthBearerLoginModule; HTTP
//     basic authentication, URL-encoded when
//     sasl.oauthbearer.header.urlencode=true; sasl.oauthbearer.scope, else
//     the scope option); a file:// URL names a file holding the token;
//   - without it: an unsecured token (Kafka's unsecured login, development
//     only) for the unsecuredLoginStringClaim_sub option (required),
//     valid unsecuredLoginLifetimeSeconds (default 3600).
//
// A token is reused until 80% of its lifetime has passed.
type OAuthLogin struct {
	fetch func(ctx context.Context) (token string, life time.Duration, err error)

	mu      sync.Mutex
	token   string
	renewAt time.Time
}

// NewOAuthLogin reads listener's login settings.
func NewOAuthLogin(cfg *config.Broker, listener string) (*OAuthLogin, error) {
	const mech = MechOAuthBearer
	opts, err := oauthJAASOptions(cfg, listener)
	if err != nil {
		return nil, err
	}
	endpoint, _ := mechValue(cfg, listener, mech, "sasl.oauthbearer.token.endpoint.url")
	endpoint = strings.TrimSpace(endpoint)
	if endpoint == "" {
		sub := opts["unsecuredLoginStringClaim_sub"]
		if sub == "" {
			return nil, fmt.Errorf("%s: no token for this node: set sasl.oauthbearer.token.endpoint.url, or (development) "+
				"the unsecuredLoginStringClaim_sub option of the %s", mechConfigName(cfg, listener, mech, "sasl.jaas.config"), OAuthBearerLoginModule)
		}
		life := time.Hour
		if s := strings.TrimSpace(opts["unsecuredLoginLifetimeSeconds"]); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("unsecuredLoginLifetimeSeconds: %q is not a positive number of seconds", s)
			}
			life = time.Duration(n) * time.Second
		}
		return &OAuthLogin{fetch: func(context.Context) (string, time.Duration, error) {
			return unsecuredToken(sub, life), life, nil
		}}, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("sasl.oauthbearer.token.endpoint.url: %w", err)
	}
	switch u.Scheme {
	case "file":
		return &OAuthLogin{fetch: func(context.Context) (string, time.Duration, error) {
			b, err := os.ReadFile(u.Path)
			if err != nil {
				return "", 0, fmt.Errorf("reading the token file: %w", err)
			}
			return strings.TrimSpace(string(b)), time.Minute, nil
		}}, nil
	case "http", "https":
	default:
		return nil, fmt.Errorf("sasl.oauthbearer.token.endpoint.url %q: want http://, https:// or file://", endpoint)
	}
	id, _ := mechValue(cfg, listener, mech, "sasl.oauthbearer.client.credentials.client.id")
	if id == "" {
		id = opts["clientId"]
	}
	secret, _ := mechValue(cfg, listener, mech, "sasl.oauthbearer.client.credentials.client.secret")
	if secret == "" {
		secret = opts["clientSecret"]
	}
	if id == "" || secret == "" {
		return nil, fmt.Errorf("sasl.oauthbearer.token.endpoint.url is set but no client id and secret: set " +
			"sasl.oauthbearer.client.credentials.client.id/.secret or the clientId and clientSecret options")
	}
	scope, _ := mechValue(cfg, listener, mech, "sasl.oauthbearer.scope")
	if scope == "" {
		scope = opts["scope"]
	}
	enc, _ := mechValue(cfg, listener, mech, "sasl.oauthbearer.header.urlencode")
	if strings.EqualFold(strings.TrimSpace(enc), "true") {
		id, secret = url.QueryEscape(id), url.QueryEscape(secret)
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	return &OAuthLogin{fetch: func(ctx context.Context) (string, time.Duration, error) {
		return clientCredentials(ctx, hc, endpoint, id, secret, scope)
	}}, nil
}

// Token returns a valid token, fetching a new one when needed.
func (l *OAuthLogin) Token(ctx context.Context) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.token != "" && time.Now().Before(l.renewAt) {
		return l.token, nil
	}
	tok, life, err := l.fetch(ctx)
	if err != nil {
		return "", err
	}
	l.token, l.renewAt = tok, time.Now().Add(life*8/10)
	return tok, nil
}

// unsecuredToken is an unsigned JWT for sub, as Kafka's unsecured login
// makes one.
func unsecuredToken(sub string, life time.Duration) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	now := time.Now()
	return enc(map[string]any{"alg": "none"}) + "." +
		enc(map[string]any{"sub": sub, "iat": now.Unix(), "exp": now.Add(life).Unix()}) + "."
}

// clientCredentials asks endpoint for a token (RFC 6749 section 4.4).
func clientCredentials(ctx context.Context, hc *http.Client, endpoint, id, secret, scope string) (string, time.Duration, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if scope != "" {
		form.Set("scope", scope)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(id, secret)
	res, err := hc.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("token endpoint: %w", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return "", 0, fmt.Errorf("token endpoint: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		return "", 0, fmt.Errorf("token endpoint: %s: %s", res.Status, strings.TrimSpace(string(body)))
	}
	var tr struct {
		AccessToken string  `json:"access_token"`
		ExpiresIn   float64 `json:"expires_in"`
	}
	if err := json.Unmarshal(body, &tr); err != nil || tr.AccessToken == "" {
		return "", 0, fmt.Errorf("token endpoint: no access_token in the answer")
	}
	life := time.Duration(tr.ExpiresIn * float64(time.Second))
	if life <= 0 {
		life = time.Minute
	}
	return tr.AccessToken, life, nil
}
