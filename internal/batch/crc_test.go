package batch

import (
	"math/rand/v2"
	"testing"
)

// bitwiseCRC32C is an independent, bit-at-a-time CRC-32C (reflected
// polynomial 0x82F63B78), used to check the table-driven one.
func bitwiseCRC32C(b []byte) uint32 {
	crc := ^uint32(0)
	for _, c := range b {
		crc ^= uint32(c)
		for k := 0; k < 8; k++ {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0x82F63B78
			} else {
				crc >>= 1
			}
		}
	}
	return ^crc
}

func TestCRCKnownVector(t *testing.T) {
	// The CRC-32C check value: "123456789" → 0xE3069283.
	b := append(make([]byte, OffAttributes), "123456789"...)
	if got := ComputeCRC(b); got != 0xE3069283 {
		t.Fatalf("ComputeCRC = %08x, want e3069283", got)
	}
	if bitwiseCRC32C([]byte("123456789")) != 0xE3069283 {
		t.Fatal("reference implementation broken")
	}
}

func TestCRCCoversAttributesToEnd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	b := buildRecords(t, None, 1, sampleRecords(4))
	for i := 0; i < 50; i++ {
		x := append([]byte(nil), b...)
		pos := rng.IntN(len(x))
		x[pos] ^= byte(1 + rng.IntN(255))
		covered := pos >= OffAttributes
		changed := ComputeCRC(x) != ComputeCRC(b)
		if covered != changed {
			t.Fatalf("flip at %d: covered %v, crc changed %v", pos, covered, changed)
		}
		if ComputeCRC(x) != bitwiseCRC32C(x[OffAttributes:]) {
			t.Fatal("table and bitwise CRC differ")
		}
	}
	x := append([]byte(nil), b...)
	x[len(x)-1] ^= 1
	UpdateCRC(x)
	if storedCRC(x) != bitwiseCRC32C(x[OffAttributes:]) {
		t.Fatal("UpdateCRC")
	}
}
