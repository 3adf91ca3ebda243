package share

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// share.auto.offset.reset, as Kafka 4.4 takes it: earliest, latest, or
// by_duration:<ISO-8601 duration> (Java's Duration format, PnDTnHnMn.nS, not negative):
// a new share partition then starts at the first record written at most that long ago
// (the latest offset if there is none).

const byDurationPrefix = "by_duration:"

// javaDuration is java.time.Duration.parse's format.
var javaDuration = regexp.MustCompile(`(?i)^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)

// parseJavaDuration parses a duration as java.time.Duration.parse does.
func parseJavaDuration(s string) (time.Duration, error) {
	m := javaDuration.FindStringSubmatch(s)
	if m == nil || m[2] == "" && m[3] == "" || strings.EqualFold(m[3], "T") {
		return 0, errors.New("Unable to parse duration string in by_duration offset reset strategy.")
	}
	var total float64
	for i, unit := range map[int]time.Duration{2: 24 * time.Hour, 4: time.Hour, 5: time.Minute, 6: time.Second} {
		if m[i] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i], 10, 64)
		if err != nil {
			return 0, errors.New("Unable to parse duration string in by_duration offset reset strategy.")
		}
		total += float64(n) * float64(unit)
	}
	if m[7] != "" {
		frac, _ := strconv.ParseFloat("0."+m[7], 64)
		if strings.HasPrefix(m[6], "-") {
			frac = -frac
		}
		total += frac * float64(time.Second)
	}
	if m[1] == "-" {
		total = -total
	}
	if total < 0 {
		return 0, errors.New("Negative duration is not supported in by_duration offset reset strategy.")
	}
	if total > float64(1<<63-1) {
		return 1<<63 - 1, nil
	}
	return time.Duration(total), nil
}

// ParseAutoOffsetReset parses a share.auto.offset.reset value: "earliest", "latest", or
// "by_duration" with its duration.
func ParseAutoOffsetReset(value string) (strategy string, d time.Duration, err error) {
	v := strings.ToLower(strings.TrimSpace(value))
	switch {
	case v == "earliest" || v == "latest":
		return v, 0, nil
	case strings.HasPrefix(v, byDurationPrefix):
		d, err := parseJavaDuration(strings.TrimSpace(v[len(byDurationPrefix):]))
		return "by_duration", d, err
	}
	return "", 0, fmt.Errorf("Unknown auto offset reset strategy: %s", value)
}

func validateAutoOffsetReset(name, value string) error {
	if _, _, err := ParseAutoOffsetReset(value); err != nil {
		return fmt.Errorf("Invalid value `%s` for configuration %s. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.", value, name)
	}
	return nil
}
