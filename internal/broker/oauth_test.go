package broker

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/sluice-broker/sluice/internal/security"
	"github.com/sluice-broker/sluice/internal/security/oauthtest"
)

const (
	testIssuer   = "https://issuer.test"
	testAudience = "sluice-test"
)

// oauthBroker has a PLAINTEXT listener, SASL_PLAINTEXT with OAUTHBEARER
// validated against a JWKS served on loopback (and PLAIN), DEV with the
// unsecured validator (and PLAIN), and REAUTH (PLAIN and unsecured
// OAUTHBEARER) where PLAIN sessions last 2.5 s and OAUTHBEARER ones 60 s.
type oauthBroker struct {
	*testBroker
	rsa, ec oauthtest.Key
}

func startOAuthBroker(t *testing.T, extra map[string]string) *oauthBroker {
	t.Helper()
	ob := &oauthBroker{rsa: oauthtest.NewRSA("rsa-1"), ec: oauthtest.NewEC("ec-1")}
	jwks := oauthtest.JWKS(ob.rsa, ob.ec)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(jwks)
	}))
	t.Cleanup(srv.Close)
	props := map[string]string{
		"sasl.enabled.mechanisms": "OAUTHBEARER,PLAIN,SCRAM-SHA-256",
		"sasl.jaas.config":        testJAAS,
		"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": security.JWKSValidatorClass,
		"listener.name.sasl_plaintext.sasl.oauthbearer.jwks.endpoint.url":             srv.URL + "/jwks",
		"sasl.oauthbearer.expected.audience":                                          testAudience,
		"sasl.oauthbearer.expected.issuer":                                            testIssuer,
		"listener.name.dev.oauthbearer.sasl.jaas.config": security.OAuthBearerLoginModule +
			` required unsecuredLoginStringClaim_sub="ignored" unsecuredValidatorRequiredScope="kafka";`,
		"listener.name.reauth.connections.max.reauth.ms":       "60000",
		"listener.name.reauth.plain.connections.max.reauth.ms": "2500",
	}
	for k, v := range extra {
		props[k] = v
	}
	ob.testBroker = startTestBroker(t, testOptions{Props: props, Listeners: []security.Listener{
		{Name: "PLAINTEXT", Protocol: security.Plaintext, Bind: "127.0.0.1:0"},
		{Name: "SASL_PLAINTEXT", Protocol: security.SASLPlaintext, Bind: "127.0.0.1:0"},
		{Name: "DEV", Protocol: security.SASLPlaintext, Bind: "127.0.0.1:0"},
		{Name: "REAUTH", Protocol: security.SASLPlaintext, Bind: "127.0.0.1:0"},
	}})
	return ob
}

func (ob *oauthBroker) clientOn(listener string, opts ...kgo.Opt) *kgo.Client {
	ob.t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(ob.srv.ListenerAddr(listener).String()), kgo.RetryTimeout(3 * time.Second),
		kgo.RequestRetries(1)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		ob.t.Fatal(err)
	}
	ob.t.Cleanup(cl.Close)
	return cl
}

// counter sums the samples of a counter family whose labels include want.
func (ob *oauthBroker) counter(name string, want map[string]string) float64 {
	ob.t.Helper()
	return counterSum(ob.t, ob.broker(), name, want)
}

// counterSum sums the samples of b's counter family name whose labels
// include want.
func counterSum(t testing.TB, b *Broker, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := b.metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for k, v := range want {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == k && lp.GetValue() == v {
						found = true
					}
				}
				if !found {
					continue metric
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

func bearer(token string) kgo.Opt {
	return kgo.SASL(oauth.Auth{Token: token}.AsMechanism())
}

func TestOAuthBearerJWKS(t *testing.T) {
	ob := startOAuthBroker(t, map[string]string{
		"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":           "User:svc-admin",
	})
	claims := func(sub string, mod func(map[string]any)) map[string]any {
		c := oauthtest.Claims(sub, time.Hour, map[string]any{"aud": testAudience, "iss": testIssuer})
		if mod != nil {
			mod(c)
		}
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// RS256 and ES256 tokens log in; the principal is User:<sub>, which the
	// authorizer sees: the super user may create a topic, alice may not.
	admin := ob.clientOn("SASL_PLAINTEXT", bearer(ob.rsa.Sign(claims("svc-admin", nil))))
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, 1, 1, nil, "oauth-topic"); err != nil {
		t.Fatalf("super user via RS256 token: %v", err)
	}
	alice := ob.clientOn("SASL_PLAINTEXT", bearer(ob.ec.Sign(claims("alice", func(c map[string]any) {
		c["aud"] = []string{"other", testAudience}
	}))))
	if err := authErr(alice); err != nil {
		t.Fatalf("ES256 token: %v", err)
	}
	resp, err := kadm.NewClient(alice).CreateTopic(ctx, 1, 1, nil, "alice-topic")
	if !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(resp.Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice creating a topic: %v %v (want TOPIC_AUTHORIZATION_FAILED)", err, resp.Err)
	}

	other := oauthtest.NewRSA("not-in-jwks")
	for name, token := range map[string]string{
		"expired":     ob.rsa.Sign(claims("alice", func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })),
		"wrong aud":   ob.rsa.Sign(claims("alice", func(c map[string]any) { c["aud"] = "another-cluster" })),
		"wrong iss":   ob.rsa.Sign(claims("alice", func(c map[string]any) { c["iss"] = "https://evil.test" })),
		"unknown kid": other.Sign(claims("alice", nil)),
		"alg none":    oauthtest.Unsecured(claims("alice", nil)),
	} {
		cl := ob.clientOn("SASL_PLAINTEXT", bearer(token))
		err := authErr(cl)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), `{"status":"invalid_token"}`) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED with the invalid_token JSON", name, err)
		}
	}
	if n := ob.counter("sluice_sasl_authentications_total", map[string]string{"mechanism": "OAUTHBEARER", "result": "failure"}); n < 5 {
		t.Errorf("failed OAUTHBEARER authentications counted: %v", n)
	}
	if !strings.Contains(ob.logs.text(), "failed authentication") {
		t.Error("failed authentication not logged")
	}
}

func TestOAuthBearerUnsecured(t *testing.T) {
	ob := startOAuthBroker(t, nil)
	tok := func(scope string) string {
		return oauthtest.Unsecured(oauthtest.Claims("alice", time.Hour, map[string]any{"scope": scope}))
	}
	ok := ob.clientOn("DEV", kgo.SASL(oauth.Auth{Token: tok("kafka other"), Extensions: map[string]string{"traceId": "t1"}}.AsMechanism()))
	if err := authErr(ok); err != nil {
		t.Fatalf("unsecured token: %v", err)
	}
	bad := ob.clientOn("DEV", bearer(tok("other")))
	if err := authErr(bad); !errors.Is(err, kerr.SaslAuthenticationFailed) ||
		!strings.Contains(err.Error(), `{"status":"insufficient_scope","scope":"kafka"}`) {
		t.Fatalf("missing scope: %v", err)
	}
	// The JWKS listener refuses unsecured tokens.
	if err := authErr(ob.clientOn("SASL_PLAINTEXT", bearer(tok("kafka")))); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("unsecured token on the JWKS listener: %v", err)
	}
}

// saslRaw runs a v1 SaslHandshake and one SaslAuthenticate v2 on rc.
func saslRaw(t *testing.T, rc *rawConn, corr int32, mech string, token []byte) (*kmsg.SASLHandshakeResponse, *kmsg.SASLAuthenticateResponse) {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, mech
	rc.send(hs, corr)
	hsr := kmsg.NewPtrSASLHandshakeResponse()
	hsr.Version = 1
	rc.recv(hsr)
	if hsr.ErrorCode != 0 {
		return hsr, nil
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 2, token
	rc.send(auth, corr+1)
	ar := kmsg.NewPtrSASLAuthenticateResponse()
	ar.Version = 2
	rc.recv(ar)
	return hsr, ar
}

func plainToken(user, pass string) []byte { return []byte("\x00" + user + "\x00" + pass) }

func rawMetadata(t *testing.T, rc *rawConn, corr int32) {
	t.Helper()
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 1
	rc.send(md, corr)
	mr := kmsg.NewPtrMetadataResponse()
	mr.Version = 1
	rc.recv(mr)
}

// TestReauthenticationProtocol drives KIP-368 byte by byte: the session
// lifetime, re-authentication on the same connection, its refusals, and
// the close of an expired session.
func TestReauthenticationProtocol(t *testing.T) {
	ob := startOAuthBroker(t, nil)
	reauthAddr := ob.srv.ListenerAddr("REAUTH").String()

	// Lifetimes: PLAIN on REAUTH 2.5 s (mechanism prefix), OAUTHBEARER on
	// REAUTH min(60 s, token) = 60 s, OAUTHBEARER on DEV the token's
	// remaining life, PLAIN on DEV none.
	rc := dialRaw(t, reauthAddr)
	if _, ar := saslRaw(t, rc, 1, "PLAIN", plainToken("alice", "alice-secret")); ar.ErrorCode != 0 || ar.SessionLifetimeMillis != 2500 {
		t.Fatalf("PLAIN on REAUTH: %+v", ar)
	}
	hourToken := []byte("n,,\x01auth=Bearer " + oauthtest.Unsecured(oauthtest.Claims("alice", time.Hour,
		map[string]any{"scope": "kafka"})) + "\x01\x01")
	rc2 := dialRaw(t, reauthAddr)
	if _, ar := saslRaw(t, rc2, 1, "OAUTHBEARER", hourToken); ar.ErrorCode != 0 || ar.SessionLifetimeMillis != 60000 {
		t.Fatalf("OAUTHBEARER on REAUTH: %+v", ar)
	}
	rc3 := dialRaw(t, ob.srv.ListenerAddr("DEV").String())
	if _, ar := saslRaw(t, rc3, 1, "OAUTHBEARER", hourToken); ar.ErrorCode != 0 ||
		ar.SessionLifetimeMillis <= 3_500_000 || ar.SessionLifetimeMillis > 3_600_000 {
		t.Fatalf("OAUTHBEARER on DEV: %+v", ar)
	}
	rc4 := dialRaw(t, ob.srv.ListenerAddr("DEV").String())
	if _, ar := saslRaw(t, rc4, 1, "PLAIN", plainToken("alice", "alice-secret")); ar.ErrorCode != 0 || ar.SessionLifetimeMillis != 0 {
		t.Fatalf("PLAIN on DEV: %+v", ar)
	}
	// No expiry: no re-authentication (ILLEGAL_SASL_STATE, stays open).
	if hsr, _ := saslRaw(t, rc4, 3, "PLAIN", nil); hsr.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("re-authentication without expiry: %+v", hsr)
	}
	rawMetadata(t, rc4, 4)

	// Re-authentication on the same connection; a second one within a
	// second is refused as Kafka refuses it, and the connection stays.
	if hsr, ar := saslRaw(t, rc2, 3, "OAUTHBEARER", hourToken); hsr.ErrorCode != 0 || ar.ErrorCode != 0 || ar.SessionLifetimeMillis != 60000 {
		t.Fatalf("re-authentication: %+v %+v", hsr, ar)
	}
	if hsr, _ := saslRaw(t, rc2, 5, "OAUTHBEARER", nil); hsr.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("second re-authentication within a second: %+v", hsr)
	}
	rawMetadata(t, rc2, 7)
	if n := ob.counter("sluice_sasl_reauthentications_total", map[string]string{"mechanism": "OAUTHBEARER", "result": "success"}); n != 1 {
		t.Errorf("re-authentications counted: %v", n)
	}

	// Another principal: SASL_AUTHENTICATION_FAILED, then closed.
	rc5 := dialRaw(t, reauthAddr)
	saslRaw(t, rc5, 1, "OAUTHBEARER", hourToken)
	bobToken := []byte("n,,\x01auth=Bearer " + oauthtest.Unsecured(oauthtest.Claims("bob", time.Hour, nil)) + "\x01\x01")
	if _, ar := saslRaw(t, rc5, 3, "OAUTHBEARER", bobToken); ar.ErrorCode != kerr.SaslAuthenticationFailed.Code || ar.ErrorMessage == nil ||
		*ar.ErrorMessage != "Cannot change principals during re-authentication from User.alice: User.bob" {
		t.Fatalf("principal change: %+v", ar)
	}
	rc5.expectClosed()

	// Another mechanism: UNSUPPORTED_SASL_MECHANISM, then closed.
	rc6 := dialRaw(t, reauthAddr)
	saslRaw(t, rc6, 1, "OAUTHBEARER", hourToken)
	if hsr, _ := saslRaw(t, rc6, 3, "PLAIN", nil); hsr.ErrorCode != kerr.UnsupportedSaslMechanism.Code {
		t.Fatalf("mechanism change: %+v", hsr)
	}
	rc6.expectClosed()

	// A re-authentication with a bad token fails and closes.
	rc7 := dialRaw(t, reauthAddr)
	saslRaw(t, rc7, 1, "OAUTHBEARER", hourToken)
	_, ar := saslRaw(t, rc7, 3, "OAUTHBEARER", []byte("n,,\x01auth=Bearer e30.e30.\x01\x01"))
	if ar.ErrorCode != 0 || string(ar.SASLAuthBytes) != `{"status":"invalid_token"}` {
		t.Fatalf("bad token challenge: %+v", ar)
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 2, []byte{1}
	rc7.send(auth, 5)
	ar = kmsg.NewPtrSASLAuthenticateResponse()
	ar.Version = 2
	rc7.recv(ar)
	if ar.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("bad token: %+v", ar)
	}
	rc7.expectClosed()
	if n := ob.counter("sluice_sasl_reauthentications_total", map[string]string{"result": "failure"}); n != 3 {
		t.Errorf("failed re-authentications counted: %v", n)
	}

	// The PLAIN session of rc (2.5 s) expires: requests are answered until
	// then, and the first one after closes the connection.
	deadline := time.Now().Add(15 * time.Second)
	closed := false
	for corr := int32(10); time.Now().Before(deadline); corr++ {
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 1
		rc.send(md, corr)
		if _, err := rc.readFrame(); err != nil {
			closed = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !closed {
		t.Fatal("expired session not closed")
	}
	if !strings.Contains(ob.logs.text(), "SASL session expired without re-authentication") {
		t.Error("expired session close not logged")
	}
	if n := ob.counter("sluice_sasl_expired_sessions_closed_total", nil); n != 1 {
		t.Errorf("expired sessions counted: %v", n)
	}
}

// TestReauthenticationKeepsInFlightWork: a long-polling Fetch read before a
// re-authentication is answered, in order, before the SASL responses.
func TestReauthenticationKeepsInFlightWork(t *testing.T) {
	ob := startOAuthBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(ob.clientOn("PLAINTEXT")).CreateTopic(ctx, 1, 1, nil, "inflight"); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, ob.srv.ListenerAddr("REAUTH").String())
	hourToken := []byte("n,,\x01auth=Bearer " + oauthtest.Unsecured(oauthtest.Claims("alice", time.Hour, nil)) + "\x01\x01")
	saslRaw(t, rc, 1, "OAUTHBEARER", hourToken)

	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.ReplicaID, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 11, -1, 800, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "inflight"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	rc.send(fetch, 10)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "OAUTHBEARER"
	rc.send(hs, 11)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 2, hourToken
	rc.send(auth, 12)

	fr := kmsg.NewPtrFetchResponse()
	fr.Version = 11
	if corr := rc.recv(fr); corr != 10 || fr.ErrorCode != 0 || len(fr.Topics) != 1 || fr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("fetch: corr %d %+v", corr, fr)
	}
	hsr := kmsg.NewPtrSASLHandshakeResponse()
	hsr.Version = 1
	if corr := rc.recv(hsr); corr != 11 || hsr.ErrorCode != 0 {
		t.Fatalf("handshake: corr %d %+v", corr, hsr)
	}
	ar := kmsg.NewPtrSASLAuthenticateResponse()
	ar.Version = 2
	if corr := rc.recv(ar); corr != 12 || ar.ErrorCode != 0 {
		t.Fatalf("authenticate: corr %d %+v", corr, ar)
	}
	rawMetadata(t, rc, 13)
}

// TestReauthenticationFranzGo: franz-go re-authenticates (PLAIN with a
// 2.5 s session, OAUTHBEARER with 3 s tokens minted per session) on its
// open connections, which are never replaced, and none is closed as
// expired.
func TestReauthenticationFranzGo(t *testing.T) {
	ob := startOAuthBroker(t, nil)
	mint := oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		return oauth.Auth{Token: oauthtest.Unsecured(map[string]any{"sub": "alice",
			"exp": float64(time.Now().Add(3*time.Second).UnixMilli()) / 1000})}, nil
	})
	clients := map[string]*kgo.Client{
		"PLAIN":       ob.clientOn("REAUTH", kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())),
		"OAUTHBEARER": ob.clientOn("REAUTH", kgo.SASL(mint)),
	}
	for mech, cl := range clients {
		if err := authErr(cl); err != nil {
			t.Fatalf("%s: %v", mech, err)
		}
	}
	// Keep the clients busy until each mechanism has re-authenticated n
	// times. (A client's first connections, to the seed and then to the
	// broker by id, are all open by its first re-authentication.)
	busyUntil := func(n float64) {
		deadline := time.Now().Add(20 * time.Second)
		for {
			done := true
			for mech, cl := range clients {
				if err := authErr(cl); err != nil {
					t.Fatalf("%s: %v", mech, err)
				}
				if ob.counter("sluice_sasl_reauthentications_total", map[string]string{"mechanism": mech, "result": "success"}) < n {
					done = false
				}
			}
			if done {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("re-authentications after 20 s: PLAIN %v, OAUTHBEARER %v (want %v)",
					ob.counter("sluice_sasl_reauthentications_total", map[string]string{"mechanism": "PLAIN"}),
					ob.counter("sluice_sasl_reauthentications_total", map[string]string{"mechanism": "OAUTHBEARER"}), n)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	busyUntil(1)
	opened := ob.counter("sluice_connections_opened_total", nil)
	busyUntil(3)
	if now := ob.counter("sluice_connections_opened_total", nil); now != opened {
		t.Errorf("connections opened during re-authentication: %v -> %v", opened, now)
	}
	if n := ob.counter("sluice_sasl_expired_sessions_closed_total", nil); n != 0 {
		t.Errorf("expired sessions closed: %v", n)
	}
	if n := ob.counter("sluice_sasl_reauthentications_total", map[string]string{"result": "failure"}); n != 0 {
		t.Errorf("failed re-authentications: %v", n)
	}
}
