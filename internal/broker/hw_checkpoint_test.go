package broker

import (
	"maps"
	"testing"

	"github.com/sluice-broker/sluice/internal/log"
)

func TestHWCheckpointFormat(t *testing.T) {
	hw := map[log.TopicPartition]int64{{Topic: "b", Partition: 1}: 7, {Topic: "a", Partition: 10}: 0, {Topic: "a", Partition: 2}: 42}
	data := encodeHWCheckpoint(log.OffsetsOf(hw))
	if want := "0\n3\na 2 42\na 10 0\nb 1 7\n"; string(data) != want {
		t.Fatalf("encoded %q, want Kafka's layout %q", data, want)
	}
	got, err := decodeHWCheckpoint(data)
	if err != nil || !maps.Equal(got.Map(), hw) {
		t.Fatalf("decoded %v %v", got, err)
	}
	for _, bad := range []string{"", "1\n0\n", "0\n2\na 0 1\n", "0\n1\na x 1\n", "0\n1\na 0 -1\n", "0\n-1\n", "0\n1\na 0 1\nb 0 2\n"} {
		if _, err := decodeHWCheckpoint([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
