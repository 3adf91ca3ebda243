package batch

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Independent compressors (the libraries directly, not our Compress).

func refGzip(t testing.TB, src []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(src)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func refLZ4(t testing.TB, src []byte) []byte {
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	w.Write(src)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func refZstd(t testing.TB, src []byte) []byte {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(src, nil)
}

// refXerial frames src as the Java client's xerial SnappyOutputStream does,
// in chunks of the given size.
func refXerial(src []byte, chunk int) []byte {
	out := []byte("\x82SNAPPY\x00")
	out = binary.BigEndian.AppendUint32(out, 1)
	out = binary.BigEndian.AppendUint32(out, 1)
	for p := 0; p < len(src); p += chunk {
		blk := snappy.Encode(nil, src[p:min(p+chunk, len(src))])
		out = binary.BigEndian.AppendUint32(out, uint32(len(blk)))
		out = append(out, blk...)
	}
	return out
}

func testPayloads() map[string][]byte {
	rng := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 200<<10)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	text := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog "), 3000)
	return map[string][]byte{"empty": {}, "one": {'x'}, "random": random, "text": text}
}

func TestCompressRoundTrip(t *testing.T) {
	for name, src := range testPayloads() {
		for _, c := range []Compression{None, Gzip, Snappy, LZ4, Zstd} {
			comp, err := Compress(c, src)
			if err != nil {
				t.Fatalf("%s/%s: %v", name, c, err)
			}
			out, err := Decompress(c, comp, len(src)+1)
			if err != nil {
				t.Fatalf("%s/%s: %v", name, c, err)
			}
			if !bytes.Equal(out, src) {
				t.Fatalf("%s/%s: round trip differs", name, c)
			}
			// Exactly at the bound is fine, one below is not.
			if _, err := Decompress(c, comp, max(len(src), 1)); err != nil {
				t.Fatalf("%s/%s at bound: %v", name, c, err)
			}
			if len(src) > 1 {
				_, err := Decompress(c, comp, len(src)-1)
				wantCode(t, err, MessageTooLarge)
			}
		}
	}
}

func TestCompressFormats(t *testing.T) {
	src := testPayloads()["text"]
	// Our snappy output is xerial framed in 32 KiB chunks, readable by a plain chunk walker.
	comp, _ := Compress(Snappy, src)
	if !bytes.HasPrefix(comp, []byte("\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")) {
		t.Fatalf("snappy header %q", comp[:16])
	}
	var got []byte
	for p := 16; p < len(comp); {
		n := int(binary.BigEndian.Uint32(comp[p:]))
		blk, err := snappy.Decode(nil, comp[p+4:p+4+n])
		if err != nil || len(blk) > 32<<10 {
			t.Fatalf("chunk at %d: %v, %d bytes", p, err, len(blk))
		}
		got = append(got, blk...)
		p += 4 + n
	}
	if !bytes.Equal(got, src) {
		t.Fatal("xerial chunks do not concatenate to the input")
	}
	// The other codecs are readable by the libraries' own stream readers.
	comp, _ = Compress(LZ4, src)
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(lz4.NewReader(bytes.NewReader(comp))); err != nil || !bytes.Equal(buf.Bytes(), src) {
		t.Fatalf("lz4: %v", err)
	}
	comp, _ = Compress(Gzip, src)
	zr, err := gzip.NewReader(bytes.NewReader(comp))
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if _, err := buf.ReadFrom(zr); err != nil || !bytes.Equal(buf.Bytes(), src) {
		t.Fatalf("gzip: %v", err)
	}
}

func TestDecompressForeignForms(t *testing.T) {
	for name, src := range testPayloads() {
		forms := map[string]struct {
			c    Compression
			data []byte
		}{
			"gzip":           {Gzip, refGzip(t, src)},
			"gzip-2-members": {Gzip, append(refGzip(t, src[:len(src)/2]), refGzip(t, src[len(src)/2:])...)},
			"snappy-raw":     {Snappy, snappy.Encode(nil, src)},
			"snappy-xerial":  {Snappy, refXerial(src, 32<<10)},
			"snappy-xerial1": {Snappy, refXerial(src, 1000)},
			"lz4":            {LZ4, refLZ4(t, src)},
			"zstd":           {Zstd, refZstd(t, src)},
			"zstd-2-frames":  {Zstd, append(refZstd(t, src[:len(src)/3]), refZstd(t, src[len(src)/3:])...)},
		}
		for fname, f := range forms {
			out, err := Decompress(f.c, f.data, 0)
			if err != nil {
				t.Fatalf("%s/%s: %v", name, fname, err)
			}
			if !bytes.Equal(out, src) {
				t.Fatalf("%s/%s: output differs", name, fname)
			}
		}
	}
}

func TestDecompressCorrupt(t *testing.T) {
	src := testPayloads()["text"]
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []Compression{Gzip, Snappy, LZ4, Zstd} {
		comp, _ := Compress(c, src)
		for i := 0; i < 200; i++ {
			x := append([]byte(nil), comp...)
			switch i % 3 {
			case 0:
				x = x[:rng.IntN(len(x))]
			case 1:
				x[rng.IntN(len(x))] ^= byte(1 + rng.IntN(255))
			case 2:
				for j := 0; j < 8; j++ {
					x[rng.IntN(len(x))] = byte(rng.Uint32())
				}
			}
			out, err := Decompress(c, x, 1<<20)
			if err == nil {
				// Some damage is undetectable (e.g. in gzip's header name); the output must still be bounded.
				if len(out) > 1<<20 {
					t.Fatalf("%s: output over bound", c)
				}
				continue
			}
			wantCodeIn(t, err, CorruptMessage, MessageTooLarge)
		}
	}
	_, err := Decompress(Compression(6), []byte{1}, 0)
	wantCode(t, err, UnsupportedCompressionType)
	_, err = Decompress(Snappy, []byte("\x82SNAPPY\x00\x00\x00"), 0)
	wantCode(t, err, CorruptMessage)
	_, err = Decompress(Snappy, append(refXerial([]byte("abc"), 10), 0, 0), 0)
	wantCode(t, err, CorruptMessage)
	_, err = Decompress(Snappy, append(refXerial([]byte("abc"), 10), 0, 0, 0, 9, 1), 0)
	wantCode(t, err, CorruptMessage)
	out, err := Decompress(Snappy, refXerial(nil, 10), 0)
	if err != nil || out == nil || len(out) != 0 {
		t.Fatalf("empty xerial: %v %v", out, err)
	}
	_, err = Decompress(None, make([]byte, 10), 9)
	wantCode(t, err, MessageTooLarge)
}

// allocDuring returns the bytes allocated while f runs.
func allocDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecompressionBombs feeds far more than the bound (1 GiB of zeros for
// gzip, zstd and a raw snappy claim; 32-64 MiB for lz4 and xerial) with a 1 MiB bound: each must fail with MESSAGE_TOO_LARGE having allocated
// only a few MiB.
func TestDecompressionBombs(t *testing.T) {
	const max = 1 << 20
	zeros := make([]byte, 1<<20)

	// gzip and zstd: one compressed MiB of zeros, repeated 1024 times as
	// concatenated members/frames.
	gz1 := refGzip(t, zeros)
	zs1 := refZstd(t, zeros)
	// lz4: a single 32 MiB frame of zeros (compressing a whole GiB would be slow).
	lz := refLZ4(t, make([]byte, 32<<20))
	// snappy: a raw block whose preamble claims 1 GiB; a xerial stream of 64 one-MiB chunks.
	rawClaim := binary.AppendUvarint(nil, 1<<30)
	rawClaim = append(rawClaim, 0, 0, 0, 0)
	sn1 := snappy.Encode(nil, zeros)
	xer := refXerial(nil, 1)
	for i := 0; i < 64; i++ {
		xer = binary.BigEndian.AppendUint32(xer, uint32(len(sn1)))
		xer = append(xer, sn1...)
	}

	bombs := []struct {
		name string
		c    Compression
		data []byte
	}{
		{"gzip", Gzip, bytes.Repeat(gz1, 1024)},
		{"zstd", Zstd, bytes.Repeat(zs1, 1024)},
		{"lz4", LZ4, lz},
		{"snappy-raw", Snappy, rawClaim},
		{"snappy-xerial", Snappy, xer},
	}
	for _, b := range bombs {
		var err error
		alloc := allocDuring(func() { _, err = Decompress(b.c, b.data, max) })
		wantCode(t, err, MessageTooLarge)
		t.Logf("%s: %d compressed bytes, allocated %d KiB", b.name, len(b.data), alloc>>10)
		// The bound is 1 MiB; allow decoder state (lz4 blocks, zstd window) on top.
		if alloc > 24<<20 {
			t.Errorf("%s bomb (%d compressed bytes): allocated %d MiB", b.name, len(b.data), alloc>>20)
		}
		// Inside a batch, validation reports the same.
		bd := NewBuilder()
		bd.Add(Record{Value: []byte("x")})
		good, _ := bd.Build()
		batch := append(good[:HeaderSize:HeaderSize], b.data...)
		binary.BigEndian.PutUint32(batch[OffLength:], uint32(len(batch)-12))
		batch[OffAttributes+1] |= byte(b.c)
		UpdateCRC(batch)
		wantCode(t, Validate(batch, ValidateOptions{CheckRecords: true, MaxDecompressed: max}), MessageTooLarge)
		_, err = Records(batch, max)
		wantCode(t, err, MessageTooLarge)
	}
}

// TestDecompressConcurrent shares the pooled decoders between goroutines
// (meaningful under -race).
func TestDecompressConcurrent(t *testing.T) {
	src := testPayloads()["text"]
	codecs := []Compression{Gzip, Snappy, LZ4, Zstd}
	comp := make([][]byte, len(codecs))
	for i, c := range codecs {
		comp[i], _ = Compress(c, src)
	}
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < 20; i++ {
				k := (g + i) % len(codecs)
				out, err := Decompress(codecs[k], comp[k], 0)
				if err == nil && !bytes.Equal(out, src) {
					err = &Error{Code: CorruptMessage, Msg: codecs[k].String() + ": concurrent output differs"}
				}
				if err == nil && i%5 == 0 {
					_, err = Compress(codecs[k], src[:1000*(g+1)])
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
