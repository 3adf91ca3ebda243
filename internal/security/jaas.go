package security

import (
	"fmt"
	"strings"
)

// LoginModule is one entry of a JAAS configuration:
// <class> <flag> key="value" ...;
type LoginModule struct {
	Class   string
	Flag    string
	Options map[string]string
}

// ParseJAAS parses a JAAS configuration in Kafka's sasl.jaas.config form:
// one or more "<login module class> <required|requisite|sufficient|optional>
// <option>=<value> ... ;" entries. Values are bare words or double-quoted
// strings (a backslash escapes the next character).
func ParseJAAS(text string) ([]LoginModule, error) {
	toks, err := jaasTokens(text)
	if err != nil {
		return nil, err
	}
	var out []LoginModule
	for i := 0; i < len(toks); {
		if toks[i].punct != 0 {
			return nil, fmt.Errorf("expected a login module class, found %q", string(toks[i].punct))
		}
		m := LoginModule{Class: toks[i].text, Options: map[string]string{}}
		i++
		if i >= len(toks) || toks[i].punct != 0 {
			return nil, fmt.Errorf("login module %s: missing control flag", m.Class)
		}
		m.Flag = strings.ToLower(toks[i].text)
		switch m.Flag {
		case "required", "requisite", "sufficient", "optional":
		default:
			return nil, fmt.Errorf("login module %s: invalid control flag %q (required, requisite, sufficient or optional)", m.Class, toks[i].text)
		}
		i++
		for {
			if i >= len(toks) {
				return nil, fmt.Errorf("login module %s: missing ';' at the end", m.Class)
			}
			if toks[i].punct == ';' {
				i++
				break
			}
			if toks[i].punct != 0 || toks[i].quoted {
				return nil, fmt.Errorf("login module %s: expected an option name", m.Class)
			}
			key := toks[i].text
			if i+2 >= len(toks) || toks[i+1].punct != '=' || toks[i+2].punct != 0 {
				return nil, fmt.Errorf("login module %s: option %s needs =value", m.Class, key)
			}
			m.Options[key] = toks[i+2].text
			i += 3
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no login module")
	}
	return out, nil
}

type jaasToken struct {
	text   string
	quoted bool
	punct  byte // '=' or ';', else 0
}

func jaasTokens(s string) ([]jaasToken, error) {
	var out []jaasToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '=' || c == ';':
			out = append(out, jaasToken{punct: c})
			i++
		case c == '"':
			var b strings.Builder
			i++
			closed := false
			for i < len(s) {
				if s[i] == '\\' && i+1 < len(s) {
					b.WriteByte(s[i+1])
					i += 2
					continue
				}
				if s[i] == '"' {
					closed = true
					i++
					break
				}
				b.WriteByte(s[i])
				i++
			}
			if !closed {
				return nil, fmt.Errorf("unterminated quoted value")
			}
			out = append(out, jaasToken{text: b.String(), quoted: true})
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n\r\f=;\"", rune(s[j])) {
				j++
			}
			out = append(out, jaasToken{text: s[i:j]})
			i = j
		}
	}
	return out, nil
}
