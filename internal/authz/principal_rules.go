package authz

import (
	"fmt"
	"regexp"
	"strings"
)

// PrincipalRules maps the subject of a client certificate (RFC 2253, e.g.
// "CN=alice,OU=eng,O=Acme") to a principal name, with the syntax and
// semantics of Kafka's ssl.principal.mapping.rules: a comma-separated list
// of rules, each DEFAULT (the subject unchanged) or
// RULE:pattern/replacement/[L|U], where pattern is a regular expression
// that must match the whole subject, replacement may refer to its groups
// ($1, $2, ...) and a trailing L or U lower- or upper-cases the result. A
// slash inside the pattern or replacement is written \/. The first rule
// that applies wins; when none does the client is refused (as Kafka's
// NoMatchingRule fails the authentication).
//
// The patterns are Go regular expressions (RE2): the usual syntax, but no
// back-references or look-arounds; such a pattern is refused when the
// configuration is read.
type PrincipalRules struct {
	rules []principalRule
	text  string
}

type principalRule struct {
	isDefault   bool
	re          *regexp.Regexp
	replacement string
	lower       bool
	upper       bool
}

// Kafka's rule grammar (SslPrincipalMapper): DEFAULT, a RULE, or anything
// else (then refused); rules are separated by commas, which may also appear
// inside a rule's pattern.
var (
	rulePattern  = `(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?)`
	ruleSplitter = regexp.MustCompile(`\s*(` + rulePattern + `|[^,]*?)\s*(?:,\s*|$)`)
	ruleParser   = regexp.MustCompile(`^(?:` + rulePattern + `)`)
	javaGroupRef = regexp.MustCompile(`\$(\d+)`)
)

// ParsePrincipalRules parses an ssl.principal.mapping.rules value. An empty
// value is DEFAULT.
func ParsePrincipalRules(s string) (*PrincipalRules, error) {
	s = strings.TrimSpace(s)
	pr := &PrincipalRules{text: s}
	if s == "" {
		pr.rules = []principalRule{{isDefault: true}}
		return pr, nil
	}
	for _, m := range ruleSplitter.FindAllStringSubmatchIndex(s, -1) {
		if m[2] < 0 {
			continue
		}
		text := s[m[2]:m[3]]
		if text == "" {
			if m[1] >= len(s) {
				break
			}
			continue
		}
		p := ruleParser.FindStringSubmatch(text)
		if p == nil || len(p[0]) != len(text) {
			return nil, fmt.Errorf("invalid rule %q (expected DEFAULT or RULE:pattern/replacement/[LU])", text)
		}
		if p[1] == "DEFAULT" {
			pr.rules = append(pr.rules, principalRule{isDefault: true})
			continue
		}
		re, err := regexp.Compile(`^(?:` + p[2] + `)$`)
		if err != nil {
			return nil, fmt.Errorf("rule %q: bad pattern: %v", text, err)
		}
		// Java replacements say $1; Go's Expand wants ${1} (so "$1x" keeps
		// its meaning). A \/ is a slash.
		repl := strings.ReplaceAll(p[3], `\/`, `/`)
		repl = javaGroupRef.ReplaceAllString(repl, `$${$1}`)
		pr.rules = append(pr.rules, principalRule{re: re, replacement: repl, lower: p[4] == "L", upper: p[4] == "U"})
	}
	if len(pr.rules) == 0 {
		return nil, fmt.Errorf("no rule in %q", s)
	}
	return pr, nil
}

// Map returns the principal name of a certificate subject, or an error when
// no rule applies.
func (pr *PrincipalRules) Map(subject string) (string, error) {
	for _, r := range pr.rules {
		if r.isDefault {
			return subject, nil
		}
		m := r.re.FindStringSubmatchIndex(subject)
		if m == nil {
			continue
		}
		out := string(r.re.ExpandString(nil, r.replacement, subject, m))
		switch {
		case r.lower:
			out = strings.ToLower(out)
		case r.upper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("no rule of ssl.principal.mapping.rules (%s) applies to %q", pr.text, subject)
}

// IsDefault reports whether the rules are just DEFAULT (the subject as is).
func (pr *PrincipalRules) IsDefault() bool {
	return len(pr.rules) == 1 && pr.rules[0].isDefault
}
