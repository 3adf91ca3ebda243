package main

import (
	"math/rand/v2"
)

// payloads returns n distinct record values of size bytes each. They are
// word-like text from a small vocabulary, so lz4/zstd compress them by
// roughly 2-4× (neither incompressible noise nor all zeros), and they are
// the same for every target because the generator is seeded.
func payloads(size, n int) [][]byte {
	r := rand.New(rand.NewPCG(7, uint64(size)))
	vocab := make([][]byte, 256)
	for i := range vocab {
		w := make([]byte, 3+r.IntN(8))
		for j := range w {
			w[j] = byte('a' + r.IntN(26))
		}
		vocab[i] = w
	}
	out := make([][]byte, n)
	for i := range out {
		v := make([]byte, 0, size+16)
		for len(v) < size {
			v = append(v, vocab[r.IntN(len(vocab))]...)
			v = append(v, ' ')
		}
		out[i] = v[:size:size]
	}
	return out
}
