package config

import (
	"errors"
	"fmt"
	"strings"
)

// Security configs: TLS (ssl.*) and SASL (sasl.*) settings of the listeners.
// Each may be given for one listener only with Kafka's prefix
// listener.name.<listener name in lower case>.<config>; the prefixed value
// wins over the unprefixed one for that listener (see ListenerValue). SASL
// JAAS configs also take the mechanism: listener.name.<l>.<mech>.sasl.jaas.config.
//
// Package security reads these; this table only names, types and documents
// them.

const (
	effectJava = "accepted, no effect (a Java security-provider setting; Sluice uses Go's crypto/tls)"
)

var securityDefs = []Def{
	// --- TLS -----------------------------------------------------------------
	bdef("ssl.keystore.type", String, ptr("JKS"), vInFold("JKS", "PKCS12", "PEM"), "",
		`Format of the key store: JKS (Kafka's default), PKCS12 or PEM. As in Java, JKS and PKCS12 each read both formats `+
			`(the file's magic number decides). A JKS store's first private-key entry by alias is used, so keep one key entry in it. `+
			`JCEKS stores are rejected at start-up (convert them with `+"`keytool -importkeystore -deststoretype PKCS12`"+`).`),
	bdef("ssl.keystore.location", String, nil, rule{}, "",
		`Key store file with the listener's private key and certificate chain. For PEM: one file holding the private key `+
			`(PKCS#8, PKCS#1 or SEC 1; encrypted PKCS#8 needs ssl.key.password) and the certificates, leaf first.`),
	sensitive(bdef("ssl.keystore.password", Password, nil, rule{}, "",
		`Password of the key store file (JKS or PKCS12; required for them, and checked against the store's integrity check). `+
			`Not used for PEM files (Kafka rejects it there too).`)),
	sensitive(bdef("ssl.key.password", Password, nil, rule{}, "",
		`Password of the private key: of the private-key entry of a JKS key store (unset: the key store password, as in `+
			`Java), or of an encrypted PEM key (ssl.keystore.key or a PEM key store file).`)),
	sensitive(bdef("ssl.keystore.certificate.chain", Password, nil, rule{}, "",
		`Certificate chain in PEM form, leaf first, given inline instead of ssl.keystore.location (needs ssl.keystore.type=PEM `+
			`and ssl.keystore.key).`)),
	sensitive(bdef("ssl.keystore.key", Password, nil, rule{}, "",
		`Private key in PEM form (PKCS#8; encrypted PKCS#8 with ssl.key.password), given inline instead of ssl.keystore.location.`)),
	bdef("ssl.truststore.type", String, ptr("JKS"), vInFold("JKS", "PKCS12", "PEM"), "",
		`Format of the trust store: JKS (Kafka's default), PKCS12 or PEM; JKS and PKCS12 each read both formats. A JKS trust `+
			`store's trusted-certificate entries are trusted, and so is the first certificate of each private-key entry, as `+
			`Java's trust manager does. JCEKS is rejected at start-up.`),
	bdef("ssl.truststore.location", String, nil, rule{}, "",
		`Trust store file: the certificate authorities client certificates are verified against (ssl.client.auth).`),
	sensitive(bdef("ssl.truststore.password", Password, nil, rule{}, "",
		`Password of the trust store file (JKS or PKCS12; optional, as in Kafka: without it a JKS store's integrity check `+
			`is skipped).`)),
	sensitive(bdef("ssl.truststore.certificates", Password, nil, rule{}, "",
		`Trusted certificates in PEM form, given inline instead of ssl.truststore.location (needs ssl.truststore.type=PEM).`)),
	bdef("ssl.client.auth", String, ptr("none"), vIn("required", "requested", "none"), "",
		`Client certificate authentication on SSL and SASL_SSL listeners: "required" refuses clients without a certificate `+
			`the trust store verifies, "requested" asks for one and verifies it if given, "none" does not ask. On an SSL listener `+
			`the principal of a verified client is its certificate subject (User:CN=...,OU=...).`),
	bdef("ssl.enabled.protocols", List, ptr("TLSv1.2,TLSv1.3"), vListIn(false, "TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"), "",
		`TLS versions accepted. Go takes a range: the lowest to the highest listed version.`),
	bdef("ssl.protocol", String, ptr("TLSv1.3"), vIn("TLS", "TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"), "",
		`The TLS protocol family. TLSv1.2 (or lower) caps the versions accepted at that version; TLSv1.3 and TLS do not.`),
	bdef("ssl.cipher.suites", List, ptr(""), rule{}, "",
		`TLS 1.2 cipher suites by IANA name (e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); empty means Go's secure defaults. `+
			`TLS 1.3 suites are not configurable in Go. A name Go does not implement is a start-up error.`),
	bdef("ssl.principal.mapping.rules", String, ptr("DEFAULT"), vPrincipalRules(), "",
		`Rules mapping the subject of a client certificate (SSL listeners) to the principal name, as Kafka's: `+
			`a comma-separated list of DEFAULT (the full subject, e.g. CN=alice,OU=eng,O=Acme) and `+
			`RULE:pattern/replacement/[L|U] (the pattern must match the whole subject; the replacement may use $1, $2, ...; `+
			`L or U lower- or upper-cases the result). The first rule that applies wins; a client no rule applies to is refused. `+
			`Patterns are Go (RE2) regular expressions: no back-references or look-arounds.`),
	bdef("ssl.endpoint.identification.algorithm", String, ptr("https"), rule{}, "",
		`Host name verification of the leader's certificate by replica fetchers on a TLS inter-broker listener: https, or empty to check the chain only.`),
	bdef("ssl.keymanager.algorithm", String, ptr("SunX509"), rule{}, effectJava, `Key manager factory algorithm.`),
	bdef("ssl.trustmanager.algorithm", String, ptr("PKIX"), rule{}, effectJava, `Trust manager factory algorithm.`),
	bdef("ssl.secure.random.implementation", String, nil, rule{}, effectJava, `SecureRandom implementation.`),
	bdef("ssl.provider", String, nil, rule{}, effectJava, `Security provider of the SSL context.`),
	bdef("ssl.engine.factory.class", Class, nil, rule{}, effectJava, `Custom SSL engine factory class.`),
	bdef("ssl.allow.dn.changes", Boolean, ptr("false"), vBool(), effectAccepted, `Allow a dynamically updated key store to change the subject.`),
	bdef("ssl.allow.san.changes", Boolean, ptr("false"), vBool(), effectAccepted, `Allow a dynamically updated key store to change the SANs.`),

	// --- SASL ----------------------------------------------------------------
	bdef("sasl.enabled.mechanisms", List, ptr("GSSAPI"), vListNonEmptyItems(false), "",
		`SASL mechanisms offered on SASL_PLAINTEXT and SASL_SSL listeners. Sluice implements PLAIN, SCRAM-SHA-256, `+
			`SCRAM-SHA-512 and OAUTHBEARER; a SASL listener whose list names any other (Kafka's default is GSSAPI) fails to start.`),
	sensitive(bdef("sasl.jaas.config", Password, nil, rule{}, "",
		`JAAS login configuration. For PLAIN, the users of the listener: org.apache.kafka.common.security.plain.PlainLoginModule `+
			`required user_<name>="<password>" ...; give it as listener.name.<listener>.plain.sasl.jaas.config (Kafka's form); `+
			`the unprefixed sasl.jaas.config is used for listeners without one (a Sluice convenience). SCRAM users are not `+
			`configured here but with AlterUserScramCredentials (kafka-configs --entity-type users).`)),
	bdef("sasl.server.max.receive.size", Int, ptr("524288"), vAtLeast(Int, 1), "",
		`Largest request frame accepted on a SASL listener before authentication completes.`),
	bdef("sasl.mechanism.inter.broker.protocol", String, ptr("GSSAPI"), rule{}, "",
		`SASL mechanism followers use on a SASL inter-broker listener: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (GSSAPI, the default, `+
			`is refused at start-up when the inter-broker listener uses SASL).`),
	bdef("sasl.mechanism.controller.protocol", String, ptr("GSSAPI"), rule{}, "",
		`SASL mechanism a cluster node uses on a SASL_PLAINTEXT or SASL_SSL controller listener (controller.listener.names) `+
			`for the quorum's and the controller's traffic: PLAIN, with the username/password of the listener's PlainLoginModule `+
			`(listener.name.<listener>.plain.sasl.jaas.config, whose user_<name> options list who may connect). GSSAPI, the `+
			`default, is refused at start-up when the controller listener uses SASL. See docs/cluster.md.`),
	bdef("sasl.server.callback.handler.class", Class, nil, rule{}, "",
		`SASL server callback handler, given per listener and mechanism as Kafka requires `+
			`(listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class; an unprefixed value is ignored, as in Kafka). For OAUTHBEARER: `+
			`org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler validates signed JWTs against `+
			`sasl.oauthbearer.jwks.endpoint.url; org.apache.kafka.common.security.oauthbearer.internals.unsecured.`+
			`OAuthBearerUnsecuredValidatorCallbackHandler accepts unsigned tokens (development only). Unset, OAUTHBEARER uses the `+
			`JWKS validator when a JWKS URL is set, else the unsecured one (Kafka always picks the unsecured one). Other classes, `+
			`and any class for PLAIN or SCRAM, are refused at start-up.`),
	bdef("sasl.login.class", Class, nil, rule{}, effectAccepted, `Custom SASL login class.`),
	bdef("sasl.login.callback.handler.class", Class, nil, rule{}, effectAccepted, `Custom SASL login callback handler.`),
	bdef("sasl.kerberos.service.name", String, nil, rule{}, effectAccepted, `Kerberos service name (GSSAPI is not supported).`),
	bdef("sasl.kerberos.principal.to.local.rules", List, ptr("DEFAULT"), rule{}, effectAccepted, `Kerberos principal mapping rules (GSSAPI is not supported).`),
	bdef("principal.builder.class", Class, nil, rule{}, effectAccepted,
		`Principal builder. Sluice builds Kafka's default principals: User:<SASL user name>, User:<certificate subject>, User:ANONYMOUS.`),
	bdef("connections.max.reauth.ms", Long, ptr("0"), vAtLeast(Long, 0), "",
		`Largest lifetime of an authenticated SASL session (KIP-368). A positive value is sent to clients in SaslAuthenticate `+
			`(v1+) as the session lifetime (for OAUTHBEARER, capped at the token's expiry); they re-authenticate on the same `+
			`connection before it ends, and a connection whose session ended without that is closed at its next request. 0 (Kafka's `+
			`default): sessions do not expire, except OAUTHBEARER ones, which end with their token. May be given per listener and `+
			`mechanism: listener.name.<listener>.<mechanism>.connections.max.reauth.ms.`),
	bdef("security.providers", String, nil, rule{}, effectJava, `Security provider creator classes.`),
}

// listenerPrefix starts a per-listener config name.
const listenerPrefix = "listener.name."

// splitListenerName splits listener.name.<listener>.<config> into the
// listener (lower case, as Kafka writes it) and the config name.
func splitListenerName(name string) (listener, rest string, ok bool) {
	s, ok := strings.CutPrefix(name, listenerPrefix)
	if !ok {
		return "", "", false
	}
	listener, rest, ok = strings.Cut(s, ".")
	if !ok || listener == "" || rest == "" {
		return "", "", false
	}
	return listener, rest, true
}

// listenerScopedDef returns the def a per-listener config name rest stands
// for: an ssl.*, sasl.* or connections.max.reauth.ms config, or
// <mechanism>.sasl.jaas.config (which has sasl.jaas.config's def).
func listenerScopedDef(rest string) (Def, bool) {
	if i, ok := brokerIndex[rest]; ok {
		d := brokerDefs[i]
		if strings.HasPrefix(rest, "ssl.") || strings.HasPrefix(rest, "sasl.") || rest == "connections.max.reauth.ms" ||
			rest == "max.connections" || rest == "max.connection.creation.rate" { // connection limits per listener
			return d, true
		}
		return Def{}, false
	}
	// Mechanism-scoped: listener.name.<l>.<mechanism>.<config> for the JAAS
	// config, the server callback handler, connections.max.reauth.ms and the
	// sasl.oauthbearer.* settings (as Kafka's mechanism prefix).
	mech, base, ok := strings.Cut(rest, ".")
	if ok && mech != "" && (base == "sasl.jaas.config" || base == "sasl.server.callback.handler.class" ||
		base == "connections.max.reauth.ms" || strings.HasPrefix(base, "sasl.oauthbearer.")) {
		if i, known := brokerIndex[base]; known {
			return brokerDefs[i], true
		}
	}
	return Def{}, false
}

// lookupPrefixed returns the def of a listener.name.<l>.<config> name, named
// by the full name.
func lookupPrefixed(name string) (Def, bool) {
	_, rest, ok := splitListenerName(name)
	if !ok {
		return Def{}, false
	}
	d, ok := listenerScopedDef(rest)
	if !ok {
		return Def{}, false
	}
	d = cloneDef(d)
	d.Name = name
	return d, true
}

// checkPrefixed validates a listener.name.* property; known is false when
// the name is not one.
func checkPrefixed(name, v string) (known bool, err error) {
	d, ok := lookupPrefixed(name)
	if !ok {
		if _, rest, ok := splitListenerName(name); ok {
			return false, &ConfigError{Name: name, Msg: fmt.Sprintf(
				"unknown per-listener config %q (listener.name.<listener>. prefixes ssl.*, sasl.*, connections.max.reauth.ms and, "+
					"after <mechanism>., sasl.jaas.config, sasl.server.callback.handler.class, connections.max.reauth.ms and "+
					"sasl.oauthbearer.*; also max.connections and max.connection.creation.rate)", rest)}
		}
		return false, nil
	}
	return true, d.Check(v)
}

// ListenerValue returns the value of a listener-scoped config for the
// listener named listener (any case), following Kafka's prefix rule:
// listener.name.<listener in lower case>.<name> if set, else name as set,
// else name's default. name may also be <mechanism>.sasl.jaas.config, which
// has no unprefixed form. ok is false when there is no value (Kafka null).
func (b *Broker) ListenerValue(listener, name string) (string, bool) {
	if v, ok := b.Raw[listenerPrefix+strings.ToLower(listener)+"."+name]; ok {
		return v, true
	}
	if _, known := brokerIndex[name]; !known {
		v, ok := b.Raw[name]
		return v, ok
	}
	return b.value(name)
}

// ListenerSet reports whether a listener-scoped config was given for
// listener, prefixed or not (a default does not count).
func (b *Broker) ListenerSet(listener, name string) bool {
	if _, ok := b.Raw[listenerPrefix+strings.ToLower(listener)+"."+name]; ok {
		return true
	}
	_, ok := b.Raw[name]
	return ok
}

// vProtocolMap accepts NAME:PROTOCOL pairs with a known protocol and each
// name once.
func vProtocolMap() rule {
	return rule{desc: "comma-separated NAME:PROTOCOL pairs; PROTOCOL one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
		fn: func(v string) error {
			_, err := ParseProtocolMap(v)
			return err
		}}
}

// ParseProtocolMap parses listener.security.protocol.map. Listener names are
// returned in upper case (Kafka normalises them so).
func ParseProtocolMap(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range parseList(v) {
		name, proto, ok := strings.Cut(item, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not NAME:PROTOCOL", item)
		}
		switch proto {
		case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
		default:
			return nil, fmt.Errorf("%q: unknown security protocol %q (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", item, proto)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("listener name %s appears more than once", name)
		}
		out[name] = proto
	}
	if len(out) == 0 {
		return nil, errors.New("value must not be empty")
	}
	return out, nil
}

// Value returns a broker config's effective raw value: as set, else the
// default; ok is false when there is neither. Unknown names read Raw only.
func (b *Broker) Value(name string) (string, bool) {
	if _, known := brokerIndex[name]; !known {
		v, ok := b.Raw[name]
		return v, ok
	}
	return b.value(name)
}
