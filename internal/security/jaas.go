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
// <option>=<value> ... ;" entries, tokenised as Kafka does:
//   - bytes 0–32 are white space;
//   - '=' and ';' are separators; any other run of characters is a word;
//   - values (and names) may be in double or single quotes: inside quotes a
//     backslash escapes the next character, with Java's \a \b \f \n \r \t
//     \v and octal (\0–\377) escapes; a quoted string may not run past the
//     end of its line (Kafka silently cuts it there; this is an error here);
//   - outside quotes, '/' starts a comment: "/*" up to "*/", else ("//" or
//     a lone '/') up to the end of the line.
//
// A repeated option name keeps the last value, as in Kafka.
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
			if toks[i].punct != 0 {
				return nil, fmt.Errorf("login module %s: expected an option name, found %q", m.Class, string(toks[i].punct))
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

func jaasSpace(c byte) bool { return c <= ' ' }

// jaasWordEnd reports whether c ends an unquoted word.
func jaasWordEnd(c byte) bool {
	return jaasSpace(c) || c == '=' || c == ';' || c == '"' || c == '\'' || c == '/'
}

func jaasTokens(s string) ([]jaasToken, error) {
	var out []jaasToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case jaasSpace(c):
			i++
		case c == '/':
			if strings.HasPrefix(s[i:], "/*") {
				end := strings.Index(s[i+2:], "*/")
				if end < 0 {
					return nil, fmt.Errorf("unterminated /* comment")
				}
				i += 2 + end + 2
				continue
			}
			// "//" or a lone '/': a comment up to the end of the line.
			for i < len(s) && s[i] != '\n' && s[i] != '\r' {
				i++
			}
		case c == '=' || c == ';':
			out = append(out, jaasToken{punct: c})
			i++
		case c == '"' || c == '\'':
			text, n, err := jaasQuoted(s[i:])
			if err != nil {
				return nil, err
			}
			out = append(out, jaasToken{text: text, quoted: true})
			i += n
		default:
			j := i
			for j < len(s) && !jaasWordEnd(s[j]) {
				j++
			}
			out = append(out, jaasToken{text: s[i:j]})
			i = j
		}
	}
	return out, nil
}

// jaasQuoted decodes the quoted string at the start of s (s[0] is the
// quote) and returns it with the number of bytes consumed.
func jaasQuoted(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); {
		c := s[i]
		switch {
		case c == q:
			return b.String(), i + 1, nil
		case c == '\n' || c == '\r':
			// (The value may be a password: it stays out of the error.)
			return "", 0, fmt.Errorf("a quoted value runs past the end of its line")
		case c != '\\':
			b.WriteByte(c)
			i++
			continue
		}
		i++ // the backslash
		if i >= len(s) {
			break // unterminated
		}
		e := s[i]
		i++
		switch e {
		case 'a':
			b.WriteByte(0x07)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte(0x0b)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			// Up to three octal digits, at most \377, as Java's tokenizer.
			v, digits := int(e-'0'), 1
			for i < len(s) && digits < 3 && s[i] >= '0' && s[i] <= '7' && (digits < 2 || e <= '3') {
				v = v<<3 | int(s[i]-'0')
				i++
				digits++
			}
			b.WriteRune(rune(v))
		default:
			b.WriteByte(e)
		}
	}
	return "", 0, fmt.Errorf("unterminated quoted value")
}
