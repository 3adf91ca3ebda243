package security

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// UnsecuredValidator is Kafka's development validator
// (OAuthBearerUnsecuredValidatorCallbackHandler): it accepts unsigned JWTs
// ("alg":"none", empty signature) and checks only their claims: the
// principal claim (a non-empty string), exp (required), iat (optional, not
// in the future), exp after iat, and the required scope. Anyone can mint
// such a token: it is for development only.
type UnsecuredValidator struct {
	PrincipalClaim string        // unsecuredValidatorPrincipalClaimName, default "sub"
	ScopeClaim     string        // unsecuredValidatorScopeClaimName, default "scope"
	RequiredScope  []string      // unsecuredValidatorRequiredScope (space separated)
	ClockSkew      time.Duration // unsecuredValidatorAllowableClockSkewMs, default 0
	Now            func() time.Time
}

// newUnsecuredValidator reads the unsecuredValidator* JAAS options.
func newUnsecuredValidator(opts map[string]string) (*UnsecuredValidator, error) {
	v := &UnsecuredValidator{PrincipalClaim: "sub", ScopeClaim: "scope"}
	if s := strings.TrimSpace(opts["unsecuredValidatorPrincipalClaimName"]); s != "" {
		v.PrincipalClaim = s
	}
	if s := strings.TrimSpace(opts["unsecuredValidatorScopeClaimName"]); s != "" {
		v.ScopeClaim = s
	}
	v.RequiredScope = strings.Fields(opts["unsecuredValidatorRequiredScope"])
	if s := strings.TrimSpace(opts["unsecuredValidatorAllowableClockSkewMs"]); s != "" {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("unsecuredValidatorAllowableClockSkewMs: %q is not a non-negative number of milliseconds", s)
		}
		v.ClockSkew = time.Duration(ms) * time.Millisecond
	}
	return v, nil
}

func (v *UnsecuredValidator) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

func invalidToken(format string, args ...any) *OAuthError {
	return &OAuthError{Status: "invalid_token", Reason: fmt.Sprintf(format, args...)}
}

// decodeJWTPart decodes one base64url part (padding optional) of a compact
// JWS into a JSON object.
func decodeJWTPart(part string) (map[string]any, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(part, "="))
	if err != nil {
		return nil, fmt.Errorf("malformed Base64 URL encoded value")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil || m == nil {
		return nil, fmt.Errorf("malformed JSON")
	}
	return m, nil
}

// numericClaim returns a NumericDate claim in seconds; ok is false when it
// is absent, err set when it is not a number.
func numericClaim(claims map[string]any, name string) (float64, bool, error) {
	raw, present := claims[name]
	if !present || raw == nil {
		return 0, false, nil
	}
	n, isNum := raw.(json.Number)
	if !isNum {
		return 0, false, fmt.Errorf("the %s claim had the incorrect type: %T", name, raw)
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false, fmt.Errorf("the %s claim had the incorrect type: %s", name, n)
	}
	return f, true, nil
}

func secondsTime(s float64) time.Time { return time.UnixMilli(int64(s * 1000)) }

// scopeClaim reads a scope claim: a space-separated string or a list of
// strings; absent is an empty scope.
func scopeClaim(claims map[string]any, name string) ([]string, error) {
	switch v := claims[name].(type) {
	case nil:
		return nil, nil
	case string:
		return strings.Fields(v), nil
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("the '%s' claim was not of type String or List of String", name)
			}
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, nil
	default:
		return nil, fmt.Errorf("the '%s' claim was not of type String or List of String", name)
	}
}

// Validate implements TokenValidator.
func (v *UnsecuredValidator) Validate(token string) (*OAuthToken, error) {
	if strings.Contains(token, "..") {
		return nil, invalidToken("malformed compact serialization contains '..'")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, invalidToken("unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
	}
	if parts[2] != "" {
		return nil, invalidToken("unsecured JWS must not contain a digital signature")
	}
	header, err := decodeJWTPart(parts[0])
	if err != nil {
		return nil, invalidToken("header: %v", err)
	}
	switch alg := header["alg"].(type) {
	case string:
		if alg != "none" {
			return nil, invalidToken("unsecured JWS must have 'none' for an algorithm (got %q)", alg)
		}
	default:
		return nil, invalidToken("JWS header must have an Algorithm value")
	}
	claims, err := decodeJWTPart(parts[1])
	if err != nil {
		return nil, invalidToken("claims: %v", err)
	}
	return checkClaims(claims, v.PrincipalClaim, v.ScopeClaim, v.RequiredScope, v.ClockSkew, v.now(), false)
}

// checkClaims applies the claim checks shared by both validators: the
// principal claim (non-empty string), exp (required), iat (required when
// needIat; never after now plus skew), exp after iat, scope and the
// required scope.
func checkClaims(claims map[string]any, principalClaim, scopeName string, required []string, skew time.Duration,
	now time.Time, needIat bool) (*OAuthToken, error) {
	p, present := claims[principalClaim]
	if !present {
		return nil, invalidToken("required claim missing: %s", principalClaim)
	}
	principal, isString := p.(string)
	if !isString {
		return nil, invalidToken("the '%s' claim was not of type String", principalClaim)
	}
	if strings.TrimSpace(principal) == "" {
		return nil, invalidToken("the '%s' claim is empty", principalClaim)
	}
	exp, ok, err := numericClaim(claims, "exp")
	if err != nil {
		return nil, invalidToken("%v", err)
	}
	if !ok {
		return nil, invalidToken("no expiration time (exp) in the JWT")
	}
	iat, hasIat, err := numericClaim(claims, "iat")
	if err != nil {
		return nil, invalidToken("%v", err)
	}
	if needIat && !hasIat {
		return nil, invalidToken("required claim missing: iat")
	}
	if hasIat && secondsTime(iat).After(now.Add(skew)) {
		return nil, invalidToken("the Issued At value (%f seconds) was after the indicated time (%d ms) plus allowable clock skew (%d ms)",
			iat, now.UnixMilli(), skew.Milliseconds())
	}
	expiry := secondsTime(exp)
	if !now.Add(-skew).Before(expiry) {
		return nil, invalidToken("the indicated time (%d ms) minus allowable clock skew (%d ms) was on or after the Expiration Time value (%f seconds)",
			now.UnixMilli(), skew.Milliseconds(), exp)
	}
	if hasIat && exp <= iat {
		return nil, invalidToken("the Expiration Time (%f seconds) was not after the Issued At time (%f seconds)", exp, iat)
	}
	scope, err := scopeClaim(claims, scopeName)
	if err != nil {
		return nil, invalidToken("%v", err)
	}
	for _, r := range required {
		found := false
		for _, s := range scope {
			if s == r {
				found = true
				break
			}
		}
		if !found {
			return nil, &OAuthError{Status: "insufficient_scope", Scope: strings.Join(required, " "),
				Reason: fmt.Sprintf("the provided scope (%v) was missing a required scope (%s)", scope, r)}
		}
	}
	return &OAuthToken{Principal: principal, Expiry: expiry, Scope: scope}, nil
}
