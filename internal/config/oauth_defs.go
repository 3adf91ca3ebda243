package config

// SASL/OAUTHBEARER configs (sasl.oauthbearer.*), with Kafka's names and
// defaults. Like the other sasl.* configs each may be given for one
// listener (listener.name.<l>.sasl.oauthbearer.…) or for one listener and
// mechanism (listener.name.<l>.oauthbearer.sasl.oauthbearer.…). Package
// security reads them.

const effectOAuthClient = "accepted, no effect (a client-side login setting; Sluice's brokers do not log in to an OAuth provider)"

var oauthDefs = []Def{
	bdef("sasl.oauthbearer.jwks.endpoint.url", String, nil, rule{}, "",
		`URL of the OAuth provider's JWKS (its public signing keys): http://, https:// (the system's trusted CAs) or file://. `+
			`Setting it makes OAUTHBEARER validate signed JWTs (RS, PS, ES and EdDSA algorithms) even without a callback handler `+
			`class. Fetched at start-up (a file that cannot be read stops the start), then every `+
			`sasl.oauthbearer.jwks.endpoint.refresh.ms, and at once when a token names a key id the set lacks.`),
	bdef("sasl.oauthbearer.jwks.endpoint.refresh.ms", Long, ptr("3600000"), vAtLeast(Long, 1), "",
		`How often the JWKS is fetched again; the keys in hand serve meanwhile, and a failed fetch keeps them.`),
	bdef("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", Long, ptr("100"), vAtLeast(Long, 0), effectAccepted,
		`Initial wait between JWKS fetch attempts in Kafka.`),
	bdef("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", Long, ptr("10000"), vAtLeast(Long, 0), "",
		`Least time between two fetches of the JWKS forced by tokens naming an unknown key id (so that made-up key ids `+
			`cannot flood the provider).`),
	bdef("sasl.oauthbearer.expected.audience", List, ptr(""), rule{}, "",
		`Audiences of this cluster: a token's aud claim must hold one of them. Required with a JWKS unless `+
			`sasl.oauthbearer.allow.unverified.audience=true.`),
	bdef("sasl.oauthbearer.expected.issuer", String, nil, rule{}, "",
		`Issuer a token's iss claim must equal. Required with a JWKS unless sasl.oauthbearer.allow.unverified.issuer=true.`),
	bdef("sasl.oauthbearer.allow.unverified.audience", Boolean, ptr("false"), vBool(), "",
		`Accept JWKS-validated tokens whatever their aud claim when sasl.oauthbearer.expected.audience is empty (a warning is logged).`),
	bdef("sasl.oauthbearer.allow.unverified.issuer", Boolean, ptr("false"), vBool(), "",
		`Accept JWKS-validated tokens whatever their iss claim when sasl.oauthbearer.expected.issuer is unset (a warning is logged).`),
	bdef("sasl.oauthbearer.clock.skew.seconds", Int, ptr("30"), vAtLeast(Int, 0), "",
		`Clock difference tolerated between the broker and the OAuth provider when checking exp, iat and nbf.`),
	bdef("sasl.oauthbearer.sub.claim.name", String, ptr("sub"), rule{}, "",
		`Claim holding the principal name: the client's principal is User:<its value>, the name ACLs use.`),
	bdef("sasl.oauthbearer.scope.claim.name", String, ptr("scope"), rule{}, "",
		`Claim holding the token's scope (a space-separated string or a list of strings).`),
	bdef("sasl.oauthbearer.jwt.validator.class", Class, ptr("org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator"), rule{}, "",
		`JWT validator. Kafka's DefaultJwtValidator (and BrokerJwtValidator) select Sluice's; other classes are refused at start-up.`),
	bdef("sasl.oauthbearer.token.endpoint.url", String, nil, rule{}, "",
		`Token endpoint of a client's OAuth login; on a node, where its own OAUTHBEARER token for the controller listener `+
			`comes from (sasl.mechanism.controller.protocol=OAUTHBEARER): http(s):// (client credentials grant) or file://. `+
			`Unset, the node presents an unsecured token for the unsecuredLoginStringClaim_sub JAAS option (development).`),
	bdef("sasl.oauthbearer.scope", String, nil, rule{}, "", `Scope a client requests (and a node, for its controller listener token).`),
	bdef("sasl.oauthbearer.client.credentials.client.id", String, nil, rule{}, "",
		`Client id of a client's OAuth login (and a node's, for its controller listener token; else the clientId JAAS option).`),
	sensitive(bdef("sasl.oauthbearer.client.credentials.client.secret", Password, nil, rule{}, "",
		`Client secret of a client's OAuth login (and a node's, for its controller listener token; else the clientSecret JAAS option).`)),
	bdef("sasl.oauthbearer.jwt.retriever.class", Class, ptr("org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever"), rule{},
		effectOAuthClient, `How a client obtains its token.`),
	bdef("sasl.oauthbearer.header.urlencode", Boolean, ptr("false"), vBool(), "",
		`URL-encode the client id and secret of a client's OAuth login (and a node's, for its controller listener token).`),
}
