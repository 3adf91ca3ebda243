package security

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-broker/sluice/internal/config"
)

// mechValue returns a listener-scoped config for one mechanism, as Kafka
// resolves the mechanism-scoped ones: listener.name.<l>.<mech>.<name>, else
// listener.name.<l>.<name>, else <name> (or its default).
func mechValue(cfg *config.Broker, listener, mech, name string) (string, bool) {
	if v, ok := cfg.Raw["listener.name."+strings.ToLower(listener)+"."+strings.ToLower(mech)+"."+name]; ok {
		return v, true
	}
	return cfg.ListenerValue(listener, name)
}

// callbackHandlerClass returns listener.name.<l>.<mech>.sasl.server.callback.handler.class:
// as in Kafka, a server callback handler is only taken with both prefixes
// (an unprefixed sasl.server.callback.handler.class is ignored).
func callbackHandlerClass(cfg *config.Broker, listener, mech string) (string, bool) {
	v, ok := cfg.Raw["listener.name."+strings.ToLower(listener)+"."+strings.ToLower(mech)+".sasl.server.callback.handler.class"]
	return strings.TrimSpace(v), ok
}

// mechConfigName names the config mechValue found, for messages.
func mechConfigName(cfg *config.Broker, listener, mech, name string) string {
	full := "listener.name." + strings.ToLower(listener) + "." + strings.ToLower(mech) + "." + name
	if _, ok := cfg.Raw[full]; ok {
		return full
	}
	return configName(cfg, listener, name)
}

// listenerOAuth builds the OAUTHBEARER token validator of a listener.
//
// The validator is Kafka's choice, by
// listener.name.<l>.oauthbearer.sasl.server.callback.handler.class:
// OAuthBearerValidatorCallbackHandler validates signed JWTs against
// sasl.oauthbearer.jwks.endpoint.url; OAuthBearerUnsecuredValidatorCallbackHandler
// accepts unsigned tokens (development). Unset, Kafka always picks the
// unsecured one; Sluice picks the JWKS validator when a JWKS URL is
// configured (Kafka would silently ignore the URL and accept unsigned
// tokens), and otherwise the unsecured one with a warning.
func listenerOAuth(cfg *config.Broker, listener string, log *slog.Logger) (TokenValidator, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	const mech = MechOAuthBearer
	class, _ := callbackHandlerClass(cfg, listener, mech)
	jwksURL, _ := mechValue(cfg, listener, mech, "sasl.oauthbearer.jwks.endpoint.url")
	jwksURL = strings.TrimSpace(jwksURL)
	switch class {
	case "":
		if jwksURL != "" {
			return newJWKSValidatorFromConfig(cfg, listener, jwksURL, log)
		}
		opts, err := oauthJAASOptions(cfg, listener)
		if err != nil {
			return nil, err
		}
		log.Warn("OAUTHBEARER uses the unsecured validator: any client can mint a token for any principal; "+
			"set sasl.oauthbearer.jwks.endpoint.url for production", "listener", listener)
		return newUnsecuredValidator(opts)
	case UnsecuredValidatorClass:
		opts, err := oauthJAASOptions(cfg, listener)
		if err != nil {
			return nil, err
		}
		log.Warn("OAUTHBEARER uses the unsecured validator (development only): any client can mint a token for any principal",
			"listener", listener)
		return newUnsecuredValidator(opts)
	case JWKSValidatorClass, jwksValidatorClassOld:
		if jwksURL == "" {
			return nil, fmt.Errorf("%s is %s, which needs sasl.oauthbearer.jwks.endpoint.url (the OAuth provider's JWKS endpoint) to verify "+
				"token signatures", mechConfigName(cfg, listener, mech, "sasl.server.callback.handler.class"), class)
		}
		return newJWKSValidatorFromConfig(cfg, listener, jwksURL, log)
	default:
		return nil, fmt.Errorf("%s: class %s is not supported (Sluice runs no Java code: use %s with a JWKS URL, or %s for development)",
			mechConfigName(cfg, listener, mech, "sasl.server.callback.handler.class"), class, JWKSValidatorClass, UnsecuredValidatorClass)
	}
}

// oauthJAASOptions returns the options of the OAuthBearerLoginModule of the
// listener (listener.name.<l>.oauthbearer.sasl.jaas.config, else an
// unprefixed sasl.jaas.config naming that module); none is an empty set
// (Kafka requires the entry; its options are all optional).
func oauthJAASOptions(cfg *config.Broker, listener string) (map[string]string, error) {
	name := "oauthbearer.sasl.jaas.config"
	text, ok := cfg.ListenerValue(listener, name)
	if !ok {
		name = "sasl.jaas.config"
		text, ok = cfg.ListenerValue(listener, name)
		if !ok || !strings.Contains(text, OAuthBearerLoginModule) {
			return map[string]string{}, nil
		}
	}
	full := configName(cfg, listener, name)
	mods, err := ParseJAAS(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", full, err)
	}
	if len(mods) != 1 || mods[0].Class != OAuthBearerLoginModule {
		return nil, fmt.Errorf("%s: must hold exactly one login module, %s", full, OAuthBearerLoginModule)
	}
	return mods[0].Options, nil
}

func newJWKSValidatorFromConfig(cfg *config.Broker, listener, jwksURL string, log *slog.Logger) (*JWKSValidator, error) {
	const mech = MechOAuthBearer
	get := func(name string) string {
		v, _ := mechValue(cfg, listener, mech, name)
		return strings.TrimSpace(v)
	}
	num := func(name string, min int64) (int64, error) {
		s := get(name)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < min {
			return 0, fmt.Errorf("%s: %q is not a number >= %d", mechConfigName(cfg, listener, mech, name), s, min)
		}
		return n, nil
	}
	if c := get("sasl.oauthbearer.jwt.validator.class"); c != "" && c != "org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator" &&
		c != "org.apache.kafka.common.security.oauthbearer.BrokerJwtValidator" {
		return nil, fmt.Errorf("%s: class %s is not supported (Sluice runs no Java code)",
			mechConfigName(cfg, listener, mech, "sasl.oauthbearer.jwt.validator.class"), c)
	}
	refresh, err := num("sasl.oauthbearer.jwks.endpoint.refresh.ms", 1)
	if err != nil {
		return nil, err
	}
	backoffMax, err := num("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", 0)
	if err != nil {
		return nil, err
	}
	skew, err := num("sasl.oauthbearer.clock.skew.seconds", 0)
	if err != nil {
		return nil, err
	}
	v := &JWKSValidator{
		Issuer:         get("sasl.oauthbearer.expected.issuer"),
		ClockSkew:      time.Duration(skew) * time.Second,
		PrincipalClaim: get("sasl.oauthbearer.sub.claim.name"),
		ScopeClaim:     get("sasl.oauthbearer.scope.claim.name"),
	}
	for _, a := range strings.Split(get("sasl.oauthbearer.expected.audience"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			v.Audience = append(v.Audience, a)
		}
	}
	if v.PrincipalClaim == "" {
		v.PrincipalClaim = "sub"
	}
	if v.ScopeClaim == "" {
		v.ScopeClaim = "scope"
	}
	// Kafka 4.x refuses a JWKS validator that checks neither who issued a
	// token nor whom it is for, unless told to accept that.
	if len(v.Audience) == 0 {
		if get("sasl.oauthbearer.allow.unverified.audience") != "true" {
			return nil, fmt.Errorf("OAUTHBEARER on listener %s: set sasl.oauthbearer.expected.audience to the audience(s) that identify "+
				"this cluster, or sasl.oauthbearer.allow.unverified.audience=true to accept tokens whatever their aud claim", listener)
		}
		log.Warn("OAUTHBEARER accepts tokens whatever their audience (sasl.oauthbearer.allow.unverified.audience=true)", "listener", listener)
	}
	if v.Issuer == "" {
		if get("sasl.oauthbearer.allow.unverified.issuer") != "true" {
			return nil, fmt.Errorf("OAUTHBEARER on listener %s: set sasl.oauthbearer.expected.issuer to the issuer URL of the OAuth "+
				"provider, or sasl.oauthbearer.allow.unverified.issuer=true to accept tokens whatever their iss claim", listener)
		}
		log.Warn("OAUTHBEARER accepts tokens whatever their issuer (sasl.oauthbearer.allow.unverified.issuer=true)", "listener", listener)
	}
	src, err := NewJWKSource(jwksURL, time.Duration(refresh)*time.Millisecond, time.Duration(backoffMax)*time.Millisecond, log)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", mechConfigName(cfg, listener, mech, "sasl.oauthbearer.jwks.endpoint.url"), err)
	}
	v.Keys = src
	return v, nil
}

// reauthLimits reads connections.max.reauth.ms for each mechanism of a
// listener (listener.name.<l>.<mech>.connections.max.reauth.ms, else the
// listener's, else the broker's); 0 means no limit.
func reauthLimits(cfg *config.Broker, listener string, mechs []string) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	for _, m := range mechs {
		v, ok := mechValue(cfg, listener, m, "connections.max.reauth.ms")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s: %q is not a number of milliseconds >= 0",
				mechConfigName(cfg, listener, m, "connections.max.reauth.ms"), v)
		}
		if n > 0 {
			out[m] = time.Duration(n) * time.Millisecond
		}
	}
	return out, nil
}
