// Package oauthtest mints OAUTHBEARER tokens for tests: signing keys (RSA,
// EC) with their JWKS, signed JWTs and unsecured ("alg":"none") tokens.
// Signing is go-jose's. Test code only.
package oauthtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Key is a private signing key with its key id and algorithm.
type Key struct {
	KID  string
	Alg  jose.SignatureAlgorithm
	Priv any
}

// NewRSA makes an RS256 key (2048 bits).
func NewRSA(kid string) Key {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return Key{KID: kid, Alg: jose.RS256, Priv: k}
}

// NewEC makes an ES256 key (P-256).
func NewEC(kid string) Key {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return Key{KID: kid, Alg: jose.ES256, Priv: k}
}

func (k Key) public() any {
	switch p := k.Priv.(type) {
	case *rsa.PrivateKey:
		return &p.PublicKey
	case *ecdsa.PrivateKey:
		return &p.PublicKey
	}
	panic("oauthtest: unknown key type")
}

// Sign returns the compact JWS of claims signed with k (kid in the header).
func (k Key) Sign(claims map[string]any) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: k.Alg, Key: jose.JSONWebKey{Key: k.Priv, KeyID: k.KID}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		panic(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		panic(err)
	}
	jws, err := s.Sign(payload)
	if err != nil {
		panic(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		panic(err)
	}
	return out
}

// JWKS returns the JSON Web Key Set of the public halves of keys.
func JWKS(keys ...Key) []byte {
	var set jose.JSONWebKeySet
	for _, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.public(), KeyID: k.KID, Algorithm: string(k.Alg), Use: "sig"})
	}
	b, err := json.Marshal(set)
	if err != nil {
		panic(err)
	}
	return b
}

// Unsecured returns an unsigned token ("alg":"none", empty signature), as
// Kafka's unsecured login module makes.
func Unsecured(claims map[string]any) string {
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]any{"alg": "none"}) + "." + enc(claims) + "."
}

// Claims returns standard claims for sub valid from now for life.
func Claims(sub string, life time.Duration, extra map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{"sub": sub, "iat": now.Unix(), "exp": now.Add(life).Unix()}
	for k, v := range extra {
		c[k] = v
	}
	return c
}
