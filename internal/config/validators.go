package config

import (
	"github.com/sluice-broker/sluice/internal/authz"

	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// rule is a validator plus a short description of the values it allows,
// used in the generated documentation.
type rule struct {
	fn   func(string) error
	desc string
}

// Value parsing follows Apache Kafka's ConfigDef: numbers, booleans and
// strings are trimmed; booleans are case-insensitive; lists are split on
// commas with the whitespace around each element trimmed.

// parseBool parses a BOOLEAN value.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("expected true or false")
}

// intBits is the width of an integer config type.
func intBits(t Type) int {
	switch t {
	case Short:
		return 16
	case Int:
		return 32
	}
	return 64
}

// parseInt parses an INT, SHORT or LONG value.
func parseInt(t Type, v string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, intBits(t))
	if err != nil {
		return 0, fmt.Errorf("not a number of type %s", t)
	}
	return n, nil
}

// parseDouble parses a DOUBLE value.
func parseDouble(v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) {
		return 0, errors.New("not a number of type DOUBLE")
	}
	return f, nil
}

// parseList splits a LIST value. An empty (or all-whitespace) value is the
// empty list; otherwise every element is kept, including empty ones, so that
// "a,,b" and "a," can be rejected by the validator.
func parseList(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

func fmtBound(n int64) string {
	switch n {
	case math.MaxInt64:
		return "9223372036854775807"
	}
	return strconv.FormatInt(n, 10)
}

func vBool() rule {
	return rule{desc: "true or false", fn: func(v string) error { _, err := parseBool(v); return err }}
}

// vInt accepts any value of integer type t.
func vInt(t Type) rule {
	return rule{desc: "any " + t.String(), fn: func(v string) error { _, err := parseInt(t, v); return err }}
}

// vAtLeast accepts integers of type t that are >= min.
func vAtLeast(t Type, min int64) rule {
	return rule{desc: "[" + fmtBound(min) + ", ...]", fn: func(v string) error {
		n, err := parseInt(t, v)
		if err != nil {
			return err
		}
		if n < min {
			return fmt.Errorf("value must be at least %s", fmtBound(min))
		}
		return nil
	}}
}

// vBetween accepts integers of type t in [min, max].
func vBetween(t Type, min, max int64) rule {
	return rule{desc: fmt.Sprintf("[%d, ..., %d]", min, max), fn: func(v string) error {
		n, err := parseInt(t, v)
		if err != nil {
			return err
		}
		if n < min || n > max {
			return fmt.Errorf("value must be between %d and %d", min, max)
		}
		return nil
	}}
}

// vGzipLevel accepts -1 (the codec default) or 1..9.
func vGzipLevel() rule {
	return rule{desc: "-1, or [1, ..., 9]", fn: func(v string) error {
		n, err := parseInt(Int, v)
		if err != nil {
			return err
		}
		if n != -1 && (n < 1 || n > 9) {
			return errors.New("value must be -1 or between 1 and 9")
		}
		return nil
	}}
}

// vDouble accepts any double.
func vDouble() rule {
	return rule{desc: "any DOUBLE", fn: func(v string) error { _, err := parseDouble(v); return err }}
}

// vDoubleBetween accepts doubles in [min, max].
func vDoubleBetween(min, max float64) rule {
	return rule{desc: fmt.Sprintf("[%g, ..., %g]", min, max), fn: func(v string) error {
		f, err := parseDouble(v)
		if err != nil {
			return err
		}
		if f < min || f > max {
			return fmt.Errorf("value must be between %g and %g", min, max)
		}
		return nil
	}}
}

// vIn accepts exactly one of the given strings (case-sensitive, trimmed).
func vIn(allowed ...string) rule {
	return rule{desc: "one of " + strings.Join(allowed, ", "), fn: func(v string) error {
		if slices.Contains(allowed, strings.TrimSpace(v)) {
			return nil
		}
		return fmt.Errorf("value must be one of %s", strings.Join(allowed, ", "))
	}}
}

// vListIn accepts a list whose every element is one of allowed. Empty
// elements are rejected; an empty list is allowed only if allowEmpty.
// Duplicates are rejected.
func vListIn(allowEmpty bool, allowed ...string) rule {
	return rule{desc: listInDesc(allowEmpty, allowed), fn: func(v string) error {
		items := parseList(v)
		if len(items) == 0 {
			if allowEmpty {
				return nil
			}
			return fmt.Errorf("value must be a non-empty comma-separated list of %s", strings.Join(allowed, ", "))
		}
		seen := make(map[string]bool, len(items))
		for _, it := range items {
			if it == "" {
				return errors.New("empty element in list")
			}
			if !slices.Contains(allowed, it) {
				return fmt.Errorf("%q is not allowed; list elements must be among %s", it, strings.Join(allowed, ", "))
			}
			if seen[it] {
				return fmt.Errorf("%q appears more than once", it)
			}
			seen[it] = true
		}
		return nil
	}}
}

// vListNonEmptyItems accepts any list without empty elements or duplicates.
// If nonEmpty, the list itself must not be empty.
func vListNonEmptyItems(nonEmpty bool) rule {
	return rule{desc: listDesc(nonEmpty), fn: func(v string) error {
		items := parseList(v)
		if len(items) == 0 && nonEmpty {
			return errors.New("value must be a non-empty comma-separated list")
		}
		seen := make(map[string]bool, len(items))
		for _, it := range items {
			if it == "" {
				return errors.New("empty element in list")
			}
			if seen[it] {
				return fmt.Errorf("%q appears more than once", it)
			}
			seen[it] = true
		}
		return nil
	}}
}

var throttledReplicaRE = regexp.MustCompile(`^[0-9]+:[0-9]+$`)

// vThrottledReplicas accepts "", "*" or a list of partition:broker pairs.
func vThrottledReplicas() rule {
	return rule{desc: `empty, "*", or partitionId:brokerId pairs`, fn: func(v string) error {
		items := parseList(v)
		if len(items) == 1 && items[0] == "*" {
			return nil
		}
		for _, it := range items {
			if !throttledReplicaRE.MatchString(it) {
				return errors.New(`value must be "*" or a comma-separated list of partitionId:brokerId pairs`)
			}
		}
		return nil
	}}
}

// vNonEmptyString rejects an empty or all-whitespace value.
func vNonEmptyString() rule {
	return rule{desc: "non-empty string", fn: func(v string) error {
		if strings.TrimSpace(v) == "" {
			return errors.New("value must not be empty")
		}
		return nil
	}}
}

// vRemoteStorage rejects enabling tiered storage, which Sluice lacks.
func vRemoteStorage() rule {
	return rule{desc: "false", fn: func(v string) error {
		b, err := parseBool(v)
		if err != nil {
			return err
		}
		if b {
			return errors.New("tiered storage is not supported by Sluice; only false is accepted")
		}
		return nil
	}}
}

// vInFold is vIn, ignoring case.
func vInFold(allowed ...string) rule {
	return rule{desc: "one of " + strings.Join(allowed, ", ") + " (any case)", fn: func(v string) error {
		v = strings.TrimSpace(v)
		for _, a := range allowed {
			if strings.EqualFold(a, v) {
				return nil
			}
		}
		return fmt.Errorf("value must be one of %s", strings.Join(allowed, ", "))
	}}
}

// vRebalanceProtocols accepts a subset of classic, consumer, share that
// contains classic.
func vRebalanceProtocols() rule {
	inner := vListIn(false, "classic", "consumer", "share", "streams")
	return rule{desc: "subset of classic, consumer, share, streams; must contain classic", fn: func(v string) error {
		if err := inner.fn(v); err != nil {
			return err
		}
		if !slices.Contains(parseList(v), "classic") {
			return errors.New(`the "classic" protocol cannot be disabled`)
		}
		return nil
	}}
}

func listInDesc(allowEmpty bool, allowed []string) string {
	d := "comma-separated subset of " + strings.Join(allowed, ", ") + ", no duplicates"
	if !allowEmpty {
		d = "non-empty " + d
	}
	return d
}

func listDesc(nonEmpty bool) string {
	if nonEmpty {
		return "non-empty comma-separated list, no duplicates"
	}
	return "comma-separated list, no duplicates"
}

// AuthorizerClasses are the authorizer.class.name values that turn on
// Sluice's authorizer (Kafka's StandardAuthorizer and AclAuthorizer).
var AuthorizerClasses = []string{
	"org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"kafka.security.authorizer.AclAuthorizer",
}

// vAuthorizer accepts an empty value or one of AuthorizerClasses.
func vAuthorizer() rule {
	return rule{desc: "empty, or " + strings.Join(AuthorizerClasses, " or "), fn: func(v string) error {
		v = strings.TrimSpace(v)
		if v == "" || slices.Contains(AuthorizerClasses, v) {
			return nil
		}
		return fmt.Errorf("Sluice's authorizer is selected with %s (StandardAuthorizer semantics); other authorizer classes are not supported",
			strings.Join(AuthorizerClasses, " or "))
	}}
}

// vSuperUsers accepts a semicolon-separated list of principals (Type:name).
func vSuperUsers() rule {
	return rule{desc: "principals separated by semicolons", fn: func(v string) error {
		for _, p := range strings.Split(v, ";") {
			if p = strings.TrimSpace(p); p != "" && !strings.Contains(p, ":") {
				return fmt.Errorf("principal %q has no type (write User:%s)", p, p)
			}
		}
		return nil
	}}
}

// vPrincipalRules accepts Kafka's ssl.principal.mapping.rules syntax.
func vPrincipalRules() rule {
	return rule{desc: "DEFAULT or RULE:pattern/replacement/[LU], comma-separated", fn: func(v string) error {
		_, err := authz.ParsePrincipalRules(v)
		return err
	}}
}
