package security

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/sluice-broker/sluice/internal/config"
)

// SASL mechanism names.
const (
	MechPlain       = "PLAIN"
	MechScramSHA256 = "SCRAM-SHA-256"
	MechScramSHA512 = "SCRAM-SHA-512"
)

// PlainLoginModule is the JAAS class whose user_<name>="<password>" options
// list the PLAIN users of a listener.
const PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"

// AuthError is a failed authentication. Message goes to the client
// (SaslAuthenticate's error message); Detail only to the log.
type AuthError struct {
	Message string
	Detail  string
}

func (e *AuthError) Error() string {
	if e.Detail != "" {
		return e.Message + " (" + e.Detail + ")"
	}
	return e.Message
}

// Session is the server side of one SASL exchange.
type Session interface {
	// Mechanism returns the mechanism name.
	Mechanism() string
	// Step takes the client's next token and returns the server's reply;
	// done is true once the client is authenticated. A failure is an
	// *AuthError; the session must not be used after an error or done.
	Step(token []byte) (reply []byte, done bool, err error)
	// User is the authenticated user name (after done).
	User() string
}

// SASLConfig is the SASL set-up of one listener.
type SASLConfig struct {
	// Mechanisms are the enabled mechanisms, in configured order.
	Mechanisms []string
	// PlainUsers maps PLAIN user names to passwords (nil without PLAIN).
	PlainUsers map[string]string
	// OAuth validates OAUTHBEARER tokens (nil without OAUTHBEARER).
	OAuth TokenValidator
	// MaxReauth is connections.max.reauth.ms by mechanism (absent: sessions
	// do not expire, unless the credential does).
	MaxReauth map[string]time.Duration
}

// ListenerSASL reads the SASL set-up of listener: sasl.enabled.mechanisms
// (PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER are implemented), with PLAIN
// the users of the PlainLoginModule in
// listener.name.<l>.plain.sasl.jaas.config (else sasl.jaas.config), with
// OAUTHBEARER its token validator, and connections.max.reauth.ms.
func ListenerSASL(cfg *config.Broker, listener string) (*SASLConfig, error) {
	return ListenerSASLLog(cfg, listener, nil)
}

// ListenerSASLLog is ListenerSASL with a logger for the warnings of the
// OAUTHBEARER set-up.
func ListenerSASLLog(cfg *config.Broker, listener string, log *slog.Logger) (*SASLConfig, error) {
	raw, _ := cfg.ListenerValue(listener, "sasl.enabled.mechanisms")
	mechName := configName(cfg, listener, "sasl.enabled.mechanisms")
	sc := &SASLConfig{}
	for _, m := range strings.Split(raw, ",") {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		switch m {
		case MechPlain, MechScramSHA256, MechScramSHA512, MechOAuthBearer:
		default:
			return nil, fmt.Errorf("%s: mechanism %s is not supported on listener %s (Sluice implements PLAIN, SCRAM-SHA-256, "+
				"SCRAM-SHA-512 and OAUTHBEARER; Kafka's default is GSSAPI, so set it explicitly)", mechName, m, listener)
		}
		if m != MechOAuthBearer {
			if c, ok := callbackHandlerClass(cfg, listener, m); ok && c != "" {
				return nil, fmt.Errorf("%s: custom callback handler classes are not supported for %s (Sluice runs no Java code)",
					mechConfigName(cfg, listener, m, "sasl.server.callback.handler.class"), m)
			}
		}
		if !slices.Contains(sc.Mechanisms, m) {
			sc.Mechanisms = append(sc.Mechanisms, m)
		}
	}
	if len(sc.Mechanisms) == 0 {
		return nil, fmt.Errorf("%s: no SASL mechanism enabled for listener %s", mechName, listener)
	}
	if slices.Contains(sc.Mechanisms, MechPlain) {
		jaasName := "plain.sasl.jaas.config"
		jaas, ok := cfg.ListenerValue(listener, jaasName)
		if !ok {
			jaasName = "sasl.jaas.config"
			jaas, ok = cfg.ListenerValue(listener, jaasName)
		}
		full := configName(cfg, listener, jaasName)
		if !ok || strings.TrimSpace(jaas) == "" {
			return nil, fmt.Errorf("listener %s enables PLAIN but has no users: set listener.name.%s.plain.sasl.jaas.config to "+
				"%s required user_<name>=\"<password>\" ...;", listener, strings.ToLower(listener), PlainLoginModule)
		}
		mods, err := ParseJAAS(jaas)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", full, err)
		}
		users, err := plainUsers(mods)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", full, err)
		}
		sc.PlainUsers = users
	}
	if slices.Contains(sc.Mechanisms, MechOAuthBearer) {
		v, err := listenerOAuth(cfg, listener, log)
		if err != nil {
			return nil, err
		}
		sc.OAuth = v
	}
	var err error
	if sc.MaxReauth, err = reauthLimits(cfg, listener, sc.Mechanisms); err != nil {
		return nil, err
	}
	return sc, nil
}

// plainUsers reads the user_<name> options of the PlainLoginModule. As in
// Kafka, a listener's JAAS config holds exactly one login module.
func plainUsers(mods []LoginModule) (map[string]string, error) {
	if len(mods) != 1 {
		return nil, fmt.Errorf("the JAAS config contains %d login modules, should be 1 (%s)", len(mods), PlainLoginModule)
	}
	for _, m := range mods {
		if m.Class != PlainLoginModule {
			continue
		}
		users := map[string]string{}
		for k, v := range m.Options {
			if u, ok := strings.CutPrefix(k, "user_"); ok && u != "" {
				users[u] = v
			}
		}
		if len(users) == 0 {
			return nil, errors.New("the PlainLoginModule lists no user_<name>=\"<password>\" option")
		}
		return users, nil
	}
	return nil, fmt.Errorf("no %s entry", PlainLoginModule)
}

// NewSession starts the server side of mechanism for a client, or returns
// false for a mechanism not enabled on the listener.
func (sc *SASLConfig) NewSession(mechanism string, scram *ScramStore) (Session, bool) {
	if !slices.Contains(sc.Mechanisms, mechanism) {
		return nil, false
	}
	switch mechanism {
	case MechPlain:
		return &plainSession{users: sc.PlainUsers}, true
	case MechScramSHA256:
		return newScramSession(ScramSHA256, scram), true
	case MechScramSHA512:
		return newScramSession(ScramSHA512, scram), true
	case MechOAuthBearer:
		if sc.OAuth == nil {
			return nil, false
		}
		return newOAuthSession(sc.OAuth), true
	}
	return nil, false
}
