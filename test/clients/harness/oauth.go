package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// cmdOAuthServer serves a minimal OAuth provider on loopback for the
// OAUTHBEARER scenarios: GET /jwks (the public key of an RSA key made at
// start) and POST /token (RFC 6749 client_credentials with HTTP Basic or
// form client authentication), which issues RS256 JWTs with sub = the
// client id, the given audience, iss = http://<addr>, iat, exp and scope.
// It prints "ready" once listening and runs until SIGTERM or SIGINT.
func cmdOAuthServer(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("oauth-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	clientID := fs.String("client-id", "sluice-client", "the one client id accepted")
	secret := fs.String("client-secret", "sluice-client-secret", "its secret")
	audience := fs.String("audience", "sluice", "aud claim of the tokens")
	lifetime := fs.Duration("lifetime", time.Hour, "token lifetime")
	if err := fs.Parse(args); err != nil {
		return err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	const kid = "harness-1"
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &key.PublicKey, KeyID: kid, Algorithm: string(jose.RS256), Use: "sig"}}})
	if err != nil {
		return err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	issuer := "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(jwks)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		fail := func(code int, e string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"error":%q}`, e)
		}
		if err := r.ParseForm(); err != nil {
			fail(http.StatusBadRequest, "invalid_request")
			return
		}
		id, sec, ok := r.BasicAuth()
		if !ok {
			id, sec = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		if r.PostForm.Get("grant_type") != "client_credentials" {
			fail(http.StatusBadRequest, "unsupported_grant_type")
			return
		}
		if id != *clientID || subtle.ConstantTimeCompare([]byte(sec), []byte(*secret)) != 1 {
			fail(http.StatusUnauthorized, "invalid_client")
			return
		}
		scope := r.PostForm.Get("scope")
		if scope == "" {
			scope = "kafka"
		}
		now := time.Now()
		claims, _ := json.Marshal(map[string]any{"sub": id, "aud": *audience, "iss": issuer, "iat": now.Unix(),
			"exp": now.Add(*lifetime).Unix(), "scope": scope})
		jws, err := signer.Sign(claims)
		if err != nil {
			fail(http.StatusInternalServerError, "server_error")
			return
		}
		tok, _ := jws.CompactSerialize()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer",
			"expires_in": int(lifetime.Seconds()), "scope": scope})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	fmt.Fprintln(stdout, "ready", issuer)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return srv.Close()
}
