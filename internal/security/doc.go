// Package security owns Sluice's listener security: parsing Kafka's
// listeners / advertised.listeners / listener.security.protocol.map into
// listeners, building the TLS server configuration of a listener from the
// ssl.* configs (JKS, PKCS12 and PEM key and trust stores, client
// authentication, protocol versions, cipher suites), and the server side of
// the SASL mechanisms PLAIN (users from a JAAS PlainLoginModule config) and
// SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802 / RFC 7677, credentials in a
// ScramStore kept in the data directory) and OAUTHBEARER (RFC 7628: Kafka's
// unsecured validator, or signed JWTs checked against a JWKS with go-jose).
//
// It reads configuration (package config) and files named by it, and the
// SCRAM credential file it owns; the only network access is the HTTP GET of
// an OAUTHBEARER JWKS endpoint. It must not touch the logs or any broker
// state. The wire package runs the TLS handshakes and gates
// requests on the SASL phase; package broker's SaslHandshake and
// SaslAuthenticate handlers drive the sessions made here.
package security
