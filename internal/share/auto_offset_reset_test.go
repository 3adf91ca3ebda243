package share

import (
	"testing"
	"time"
)

func TestParseAutoOffsetReset(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"by_duration:PT1H":        time.Hour,
		"BY_DURATION:P1DT2H30M":   26*time.Hour + 30*time.Minute,
		"by_duration:PT0.5S":      500 * time.Millisecond,
		"by_duration:pt10m":       10 * time.Minute,
		"by_duration:P2D":         48 * time.Hour,
		"by_duration:PT1H-30M":    30 * time.Minute,
		" by_duration: PT15S ":    15 * time.Second,
		"by_duration:PT0S":        0,
		"by_duration:+PT1M":       time.Minute,
		"by_duration:PT1.000001S": time.Second + time.Microsecond,
	} {
		s, d, err := ParseAutoOffsetReset(v)
		if err != nil || s != "by_duration" || d != want {
			t.Errorf("%q: %s %v %v, want %v", v, s, d, err, want)
		}
	}
	for _, v := range []string{"earliest", "LATEST"} {
		if _, _, err := ParseAutoOffsetReset(v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
		if err := ValidateGroupConfig(CfgAutoOffsetReset, v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	for _, v := range []string{"by_duration:", "by_duration:P", "by_duration:PT", "by_duration:-PT1H", "by_duration:PT-1H",
		"by_duration:1H", "sometimes", "by_duration:P1H", ""} {
		if _, _, err := ParseAutoOffsetReset(v); err == nil {
			t.Errorf("%q accepted", v)
		}
		want := "Invalid value `" + v + "` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
		if err := ValidateGroupConfig(CfgAutoOffsetReset, v); err == nil || err.Error() != want {
			t.Errorf("%q: %v", v, err)
		}
	}
}
