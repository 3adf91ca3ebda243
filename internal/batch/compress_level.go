package batch

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression levels as Apache Kafka's compression.gzip.level,
// compression.lz4.level and compression.zstd.level configs define them.
// Level 0 passed to AppendCompressed means the codec's default.
const (
	GzipDefaultLevel = -1 // zlib's default (6)
	GzipMinLevel     = 1
	GzipMaxLevel     = 9
	LZ4DefaultLevel  = 9 // Kafka uses lz4's fast compressor for its default level
	LZ4MinLevel      = 1
	LZ4MaxLevel      = 17
	ZstdDefaultLevel = 3
	ZstdMinLevel     = -131072
	ZstdMaxLevel     = 22
)

// ValidLevel reports whether level is a valid Kafka level for c (0, the
// codec default, is always valid; None and Snappy take no level).
func ValidLevel(c Compression, level int) bool {
	if level == 0 {
		return true
	}
	switch c {
	case Gzip:
		return level == GzipDefaultLevel || (level >= GzipMinLevel && level <= GzipMaxLevel)
	case LZ4:
		return level >= LZ4MinLevel && level <= LZ4MaxLevel
	case Zstd:
		return level >= ZstdMinLevel && level <= ZstdMaxLevel
	case None, Snappy:
		return true
	}
	return false
}

// AppendCompressed appends src compressed with c at level to dst and
// returns the extended slice. The output is in the form Compress writes
// (gzip, xerial-framed snappy, lz4 frames of 64 KiB blocks, zstd). level
// follows Kafka's configs (see ValidLevel); 0 means the codec's default:
//
//   - gzip: -1 (default) or 1..9, as deflate levels;
//   - lz4: 9 (Kafka's default) uses the fast compressor, as Kafka does; any
//     other level uses the high-compression mode, levels above 9 as 9 (the
//     strongest this Go implementation has);
//   - zstd: mapped to the nearest of the Go encoder's four speeds (below 3
//     fastest, 3–5 default, 6–9 better, 10 and up best);
//   - snappy and none take no level.
//
// With c == None, src is appended as is.
func AppendCompressed(dst []byte, c Compression, level int, src []byte) ([]byte, error) {
	if !ValidLevel(c, level) {
		return nil, fmt.Errorf("batch: %s does not support compression level %d", c, level)
	}
	switch c {
	case None:
		return append(dst, src...), nil
	case Gzip:
		if level == 0 {
			level = GzipDefaultLevel
		}
		return appendGzip(dst, level, src)
	case Snappy:
		out, err := Compress(Snappy, src)
		if err != nil {
			return nil, err
		}
		return append(dst, out...), nil
	case LZ4:
		if level == 0 {
			level = LZ4DefaultLevel
		}
		return appendLZ4(dst, level, src)
	case Zstd:
		if level == 0 {
			level = ZstdDefaultLevel
		}
		enc, err := zstdLevelEncoder(zstd.EncoderLevelFromZstd(level))
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(src, dst), nil
	}
	return nil, errorf(UnsupportedCompressionType, "unknown compression codec %d", int(c))
}

// gzipLevelWriters pools *gzip.Writer per level: index level+1 (-1..9).
var gzipLevelWriters [GzipMaxLevel + 2]sync.Pool

func appendGzip(dst []byte, level int, src []byte) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	p := &gzipLevelWriters[level+1]
	zw, _ := p.Get().(*gzip.Writer)
	if zw == nil {
		var err error
		if zw, err = gzip.NewWriterLevel(buf, level); err != nil {
			return nil, err
		}
	} else {
		zw.Reset(buf)
	}
	defer p.Put(zw)
	if _, err := zw.Write(src); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// lz4LevelWriters pools *lz4.Writer per Go level: index 0 fast, 1..9 HC.
var lz4LevelWriters [10]sync.Pool

func lz4Level(level int) (int, lz4.CompressionLevel) {
	if level == LZ4DefaultLevel {
		return 0, lz4.Fast
	}
	n := min(level, 9)
	return n, lz4HCLevels[n-1]
}

var lz4HCLevels = [9]lz4.CompressionLevel{lz4.Level1, lz4.Level2, lz4.Level3, lz4.Level4,
	lz4.Level5, lz4.Level6, lz4.Level7, lz4.Level8, lz4.Level9}

func appendLZ4(dst []byte, level int, src []byte) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	i, lv := lz4Level(level)
	p := &lz4LevelWriters[i]
	zw, _ := p.Get().(*lz4.Writer)
	if zw == nil {
		zw = lz4.NewWriter(buf)
		if err := zw.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ConcurrencyOption(1),
			lz4.CompressionLevelOption(lv)); err != nil {
			return nil, err
		}
	} else {
		zw.Reset(buf)
	}
	if _, err := zw.Write(src); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	zw.Reset(nil) // drop the reference to buf before pooling
	p.Put(zw)
	return buf.Bytes(), nil
}

// zstdLevelEncoders holds one encoder per Go speed; EncodeAll is safe for
// concurrent use.
var zstdLevelEncoders [zstd.SpeedBestCompression + 1]func() (*zstd.Encoder, error)

func init() {
	for l := zstd.SpeedFastest; l <= zstd.SpeedBestCompression; l++ {
		zstdLevelEncoders[l] = sync.OnceValues(func() (*zstd.Encoder, error) {
			return zstd.NewWriter(nil, zstd.WithLowerEncoderMem(true), zstd.WithEncoderLevel(l))
		})
	}
}

func zstdLevelEncoder(l zstd.EncoderLevel) (*zstd.Encoder, error) {
	if l < zstd.SpeedFastest || l > zstd.SpeedBestCompression {
		l = zstd.SpeedDefault
	}
	return zstdLevelEncoders[l]()
}
