package batch

import (
	"bytes"
	"fmt"
	"testing"
)

// levelInput is compressible but not trivially so.
func levelInput() []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < 200<<10; i++ {
		fmt.Fprintf(&b, "record %d: user=%d action=%s amount=%d\n", i, i*7919%1000, []string{"buy", "sell", "hold"}[i%3], i*31%977)
	}
	return b.Bytes()
}

func TestAppendCompressedRoundTrip(t *testing.T) {
	src := levelInput()
	for _, tc := range []struct {
		c      Compression
		levels []int
	}{
		{None, []int{0}},
		{Snappy, []int{0}},
		{Gzip, []int{0, -1, 1, 6, 9}},
		{LZ4, []int{0, 1, 5, 9, 10, 17}},
		{Zstd, []int{0, ZstdMinLevel, -1, 1, 3, 7, 12, 22}},
	} {
		for _, lv := range tc.levels {
			prefix := []byte("header")
			out, err := AppendCompressed(append([]byte(nil), prefix...), tc.c, lv, src)
			if err != nil {
				t.Fatalf("%s level %d: %v", tc.c, lv, err)
			}
			if !bytes.HasPrefix(out, prefix) {
				t.Fatalf("%s level %d: prefix lost", tc.c, lv)
			}
			got, err := Decompress(tc.c, out[len(prefix):], 0)
			if err != nil || !bytes.Equal(got, src) {
				t.Fatalf("%s level %d: round trip failed: %v", tc.c, lv, err)
			}
			// Twice, to go through the pooled writers.
			again, err := AppendCompressed(append([]byte(nil), prefix...), tc.c, lv, src)
			if err != nil || !bytes.Equal(again, out) {
				t.Fatalf("%s level %d: second run differs (%v)", tc.c, lv, err)
			}
		}
	}
}

func TestAppendCompressedDefaultsMatchCompress(t *testing.T) {
	// Kafka's default levels give what Compress (the client-side form)
	// gives; other levels really change the output.
	src := levelInput()
	for _, tc := range []struct {
		c          Compression
		def, other int
	}{
		{Gzip, GzipDefaultLevel, 1},
		{LZ4, LZ4DefaultLevel, 4},
		{Zstd, ZstdDefaultLevel, 19},
	} {
		want, err := Compress(tc.c, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, lv := range []int{0, tc.def} {
			got, err := AppendCompressed(nil, tc.c, lv, src)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s level %d differs from Compress (%v)", tc.c, lv, err)
			}
		}
		got, err := AppendCompressed(nil, tc.c, tc.other, src)
		if err != nil || bytes.Equal(got, want) {
			t.Fatalf("%s level %d gives the default output (%v)", tc.c, tc.other, err)
		}
	}
}

func TestAppendCompressedRejectsLevels(t *testing.T) {
	for _, tc := range []struct {
		c  Compression
		lv int
	}{
		{Gzip, -2}, {Gzip, 10}, {LZ4, -1}, {LZ4, 18}, {Zstd, 23}, {Zstd, ZstdMinLevel - 1}, {Compression(5), 0},
	} {
		if _, err := AppendCompressed(nil, tc.c, tc.lv, []byte("x")); err == nil {
			t.Errorf("%s level %d accepted", tc.c, tc.lv)
		}
		if tc.c <= Zstd && ValidLevel(tc.c, tc.lv) {
			t.Errorf("ValidLevel(%s, %d) = true", tc.c, tc.lv)
		}
	}
}
