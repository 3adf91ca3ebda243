package config

import (
	"fmt"
	"os"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// LoadBrokerFile reads a server.properties-style file in Java properties
// syntax (see ParseProperties). It does not validate names or values: pass
// the result to NewBroker.
func LoadBrokerFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	props, err := ParseProperties(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return props, nil
}

// ParseProperties parses text in java.util.Properties syntax:
//   - lines whose first non-blank character is '#' or '!' are comments;
//   - a line ending in an odd number of backslashes continues on the next
//     line, whose leading whitespace is dropped;
//   - the key ends at the first unescaped '=', ':' or whitespace; whitespace
//     and one '=' or ':' after it are skipped; the rest is the value;
//   - escapes \t \n \r \f and \uXXXX are decoded, and a backslash before any
//     other character stands for that character.
//
// A later duplicate key wins. Unlike Java, the text is read as UTF-8, not
// ISO-8859-1. A malformed \u escape is an error naming the line.
func ParseProperties(text string) (map[string]string, error) {
	props := map[string]string{}
	lines := splitLines(text)
	for i := 0; i < len(lines); i++ {
		startLine := i + 1
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// Join continuation lines.
		var logical strings.Builder
		for {
			if trailingBackslashes(line)%2 == 1 {
				logical.WriteString(line[:len(line)-1])
				i++
				if i >= len(lines) {
					break
				}
				line = strings.TrimLeft(lines[i], " \t\f")
				continue
			}
			logical.WriteString(line)
			break
		}
		key, value, err := splitKeyValue(logical.String())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", startLine, err)
		}
		props[key] = value
	}
	return props, nil
}

// splitLines splits on \n, \r\n and \r.
func splitLines(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	return strings.Split(text, "\n")
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

func isPropSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

// splitKeyValue splits one logical line (leading whitespace already removed)
// and decodes escapes in both parts.
func splitKeyValue(line string) (string, string, error) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++ // skip the escaped character
			continue
		}
		if c == '=' || c == ':' || isPropSpace(c) {
			end = i
			break
		}
	}
	rest := line[end:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	key, err := unescapeProp(line[:end])
	if err != nil {
		return "", "", err
	}
	value, err := unescapeProp(rest)
	if err != nil {
		return "", "", err
	}
	return key, value, nil
}

func unescapeProp(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash is dropped, as in Java
		}
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			r, err := hex4(s, i+1)
			if err != nil {
				return "", err
			}
			i += 4
			// Combine a UTF-16 surrogate pair written as two escapes.
			if utf16.IsSurrogate(r) && i+6 < len(s) && strings.HasPrefix(s[i+1:], `\u`) {
				if r2, err := hex4(s, i+3); err == nil {
					if c := utf16.DecodeRune(r, r2); c != utf8.RuneError {
						r = c
						i += 6
					}
				}
			}
			b.WriteRune(r)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// hex4 decodes the four hex digits of a \uXXXX escape starting at s[i].
func hex4(s string, i int) (rune, error) {
	if i+4 > len(s) {
		return 0, fmt.Errorf(`malformed \uXXXX escape`)
	}
	var r rune
	for _, h := range []byte(s[i : i+4]) {
		var d byte
		switch {
		case h >= '0' && h <= '9':
			d = h - '0'
		case h >= 'a' && h <= 'f':
			d = h - 'a' + 10
		case h >= 'A' && h <= 'F':
			d = h - 'A' + 10
		default:
			return 0, fmt.Errorf(`malformed \uXXXX escape`)
		}
		r = r<<4 | rune(d)
	}
	return r, nil
}
