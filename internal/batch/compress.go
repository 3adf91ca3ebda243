package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// zstdMaxWindow bounds the window a zstd frame may ask for. Every standard
// compression level up to 22 fits (level 22 uses 2^27 only with long mode,
// which Kafka clients do not use).
const zstdMaxWindow = 64 << 20

// xerialMagic opens the snappy framing Kafka's Java client writes
// (org.xerial.snappy's SnappyOutputStream): magic, then a 4-byte version and a
// 4-byte compatible version, then chunks of [4-byte big-endian length][raw
// snappy block].
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16
	xerialBlockSize  = 32 << 10 // chunk size the Java client uses
)

// Decompress returns the decompressed form of src, which was compressed with
// c. The output may not exceed max bytes (max <= 0 means
// DefaultMaxDecompressed); exceeding it is a MESSAGE_TOO_LARGE *Error, found
// without allocating much beyond max. Snappy input may be a raw snappy block
// or xerial framed; gzip and zstd input may hold several concatenated
// members or frames. With c == None, src itself is returned.
func Decompress(c Compression, src []byte, max int) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxDecompressed
	}
	switch c {
	case None:
		if len(src) > max {
			return nil, tooLarge(max)
		}
		return src, nil
	case Gzip:
		return gunzip(src, max)
	case Snappy:
		return unsnappy(src, max)
	case LZ4:
		return unlz4(src, max)
	case Zstd:
		return unzstd(src, max)
	}
	return nil, errorf(UnsupportedCompressionType, "unknown compression codec %d", int(c))
}

func tooLarge(max int) *Error {
	return errorf(MessageTooLarge, "decompressed records exceed the %d byte limit", max)
}

func corrupt(c Compression, err error) *Error {
	return errorf(CorruptMessage, "%s: cannot decompress records: %v", c, err)
}

// readBounded reads r to EOF into a buffer of at most max bytes. hint is the
// initial capacity guess.
func readBounded(c Compression, r io.Reader, max, hint int) ([]byte, error) {
	if hint < 512 || hint > max+1 {
		hint = 512
	}
	buf := make([]byte, 0, hint)
	for {
		if len(buf) == cap(buf) {
			if len(buf) > max {
				return nil, tooLarge(max)
			}
			n := 2 * cap(buf)
			if n > max+1 {
				n = max + 1 // one byte past max is enough to detect the overflow
			}
			nb := make([]byte, len(buf), n)
			copy(nb, buf)
			buf = nb
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > max {
			return nil, tooLarge(max)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, corrupt(c, err)
		}
	}
}

var gzipReaders sync.Pool // *gzip.Reader

func gunzip(src []byte, max int) ([]byte, error) {
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(bytes.NewReader(src))
	} else {
		err = zr.Reset(bytes.NewReader(src))
	}
	if err != nil {
		return nil, corrupt(Gzip, err)
	}
	defer gzipReaders.Put(zr)
	hint := 4 * len(src)
	if len(src) >= 18 {
		// ISIZE, the last member's uncompressed size mod 2^32: exact for
		// the usual single member.
		hint = int(binary.LittleEndian.Uint32(src[len(src)-4:])) + 1 // +1: room to read EOF without growing
	}
	return readBounded(Gzip, zr, max, hint)
}

func unsnappy(src []byte, max int) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		return snappyBlock(nil, src, max)
	}
	if len(src) < xerialHeaderSize {
		return nil, corrupt(Snappy, errors.New("truncated xerial header"))
	}
	var out []byte
	for p := xerialHeaderSize; p < len(src); {
		if len(src)-p < 4 {
			return nil, corrupt(Snappy, errors.New("truncated xerial chunk length"))
		}
		n := int(binary.BigEndian.Uint32(src[p:]))
		p += 4
		if n < 0 || n > len(src)-p {
			return nil, corrupt(Snappy, fmt.Errorf("xerial chunk of %d bytes, %d left", n, len(src)-p))
		}
		var err error
		if out, err = snappyBlock(out, src[p:p+n], max); err != nil {
			return nil, err
		}
		p += n
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}

// snappyBlock appends the decoding of one raw snappy block to dst, keeping
// the total within max. The decoded length is read from the block preamble
// before anything is allocated.
func snappyBlock(dst, block []byte, max int) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, corrupt(Snappy, err)
	}
	if n > max-len(dst) {
		return nil, tooLarge(max)
	}
	if dst == nil {
		out := make([]byte, n)
		if _, err := snappy.Decode(out, block); err != nil {
			return nil, corrupt(Snappy, err)
		}
		return out, nil
	}
	if cap(dst)-len(dst) < n {
		nc := 2 * cap(dst)
		if nc < len(dst)+n {
			nc = len(dst) + n
		}
		if nc > max {
			nc = max
		}
		nd := make([]byte, len(dst), nc)
		copy(nd, dst)
		dst = nd
	}
	if _, err := snappy.Decode(dst[len(dst):len(dst)+n], block); err != nil {
		return nil, corrupt(Snappy, err)
	}
	return dst[:len(dst)+n], nil
}

var lz4Readers sync.Pool // *lz4.Reader

func unlz4(src []byte, max int) ([]byte, error) {
	zr, _ := lz4Readers.Get().(*lz4.Reader)
	if zr == nil {
		zr = lz4.NewReader(nil)
	}
	zr.Reset(bytes.NewReader(src))
	defer lz4Readers.Put(zr)
	return readBounded(LZ4, zr, max, 4*len(src))
}

var zstdDecoders sync.Pool // *zstd.Decoder

func unzstd(src []byte, max int) ([]byte, error) {
	zr, _ := zstdDecoders.Get().(*zstd.Decoder)
	if zr == nil {
		var err error
		zr, err = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1), // synchronous: no goroutines to leak from the pool
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(zstdMaxWindow),
			zstd.WithDecodeBuffersBelow(0))
		if err != nil {
			return nil, corrupt(Zstd, err)
		}
	}
	if err := zr.Reset(bytes.NewReader(src)); err != nil {
		return nil, corrupt(Zstd, err)
	}
	hint := 4 * len(src)
	var fh zstd.Header
	if fh.Decode(src) == nil && fh.HasFCS && fh.FrameContentSize < uint64(max) {
		hint = int(fh.FrameContentSize) + 1 // +1: reaching EOF needs room for one more read
	}
	out, err := readBounded(Zstd, zr, max, hint)
	_ = zr.Reset(nil) // drop the reference to src before pooling
	zstdDecoders.Put(zr)
	return out, err
}

// Compress returns src compressed with c, in the form Kafka's Java client
// writes: gzip (default level), snappy in xerial framing (32 KiB chunks),
// lz4 frame format (64 KiB blocks), zstd (default level). With c == None,
// src itself is returned.
func Compress(c Compression, src []byte) ([]byte, error) {
	switch c {
	case None:
		return src, nil
	case Gzip:
		var buf bytes.Buffer
		zw, _ := gzipWriters.Get().(*gzip.Writer)
		if zw == nil {
			zw = gzip.NewWriter(&buf)
		} else {
			zw.Reset(&buf)
		}
		defer gzipWriters.Put(zw)
		if _, err := zw.Write(src); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case Snappy:
		size := xerialHeaderSize
		for p := 0; p < len(src); p += xerialBlockSize {
			size += 4 + snappy.MaxEncodedLen(min(xerialBlockSize, len(src)-p))
		}
		out := make([]byte, xerialHeaderSize, size)
		copy(out, xerialMagic)
		binary.BigEndian.PutUint32(out[8:], 1)  // version
		binary.BigEndian.PutUint32(out[12:], 1) // compatible version
		for p := 0; p < len(src); p += xerialBlockSize {
			end := min(p+xerialBlockSize, len(src))
			at := len(out)
			out = append(out, 0, 0, 0, 0)
			enc := snappy.Encode(out[len(out):cap(out)], src[p:end]) // fits: capacity computed above
			binary.BigEndian.PutUint32(out[at:], uint32(len(enc)))
			out = out[:len(out)+len(enc)]
		}
		return out, nil
	case LZ4:
		var buf bytes.Buffer
		zw := lz4.NewWriter(&buf)
		if err := zw.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ConcurrencyOption(1)); err != nil {
			return nil, err
		}
		if _, err := zw.Write(src); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case Zstd:
		enc, err := zstdEncoder()
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(src, make([]byte, 0, len(src)/2+64)), nil
	}
	return nil, errorf(UnsupportedCompressionType, "unknown compression codec %d", int(c))
}

var gzipWriters sync.Pool // *gzip.Writer

var zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	// EncodeAll is safe for concurrent use; one encoder serves every caller.
	return zstd.NewWriter(nil, zstd.WithLowerEncoderMem(true))
})
