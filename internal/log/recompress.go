package log

import (
	"encoding/binary"
	"errors"

	"github.com/sluice-broker/sluice/internal/batch"
)

// compression.type other than "producer": Append re-encodes each batch that
// arrives with a codec other than the topic's, as Apache Kafka's
// LogValidator does. The rules, from Kafka:
//
//   - only the codec decides: a batch already in the target codec is kept as
//     produced, whatever level it was compressed with;
//   - an uncompressed control batch stays uncompressed;
//   - the records are validated as for any produce (a compressed batch is
//     decompressed within maxDecompressed and walked, so a corrupt payload is
//     CORRUPT_MESSAGE and a null key on a compacted topic INVALID_RECORD);
//   - the re-encoded batch must still fit max.message.bytes
//     (MESSAGE_TOO_LARGE) and the produce segment.bytes
//     (RECORD_LIST_TOO_LARGE);
//   - producer id, epoch and base sequence are kept, so idempotent
//     duplicate detection sees the same batch; offsets, the leader epoch and
//     LogAppendTime are then assigned as for any batch.
//
// The v2 record encoding does not depend on the codec, so the decompressed
// record section is the re-encoded batch's record section byte for byte:
// every record keeps its offset delta, timestamp delta, key, value and
// headers, and the header keeps its base and max timestamp, attributes
// (timestamp type, transactional, control bits), producer fields and leader
// epoch; only the codec bits, the length and the CRC change. (Kafka rebuilds
// the records instead and rebases timestamps on the first record; the
// records' absolute timestamps are the same either way.)

// needsRecompress reports whether the batch b (at least a header) must be
// re-encoded for target. Unknown codecs are left to batch.Inspect to reject.
func needsRecompress(b []byte, target batch.Compression) bool {
	if target == ProducerCompression {
		return false
	}
	attrs := binary.BigEndian.Uint16(b[batch.OffAttributes:])
	src := batch.Compression(attrs & batch.AttrCompressionMask)
	if src == target || src > batch.Zstd {
		return false
	}
	if src == batch.None && attrs&batch.AttrControl != 0 {
		return false // Kafka does not compress control records written uncompressed
	}
	return true
}

// recompress validates the whole batch b as batch.Inspect does with vopts
// and returns it re-encoded with codec target at level (see
// batch.AppendCompressed), with the Summary of the validation. b is not
// modified; the result is a new slice. Bad input is a *batch.Error.
func recompress(b []byte, target batch.Compression, level int, vopts batch.ValidateOptions) ([]byte, batch.Summary, error) {
	src := batch.Compression(binary.BigEndian.Uint16(b[batch.OffAttributes:]) & batch.AttrCompressionMask)
	if src == batch.None {
		// Inspect walks uncompressed records whatever the options.
		sum, err := batch.Inspect(b, vopts)
		if err != nil {
			return nil, batch.Summary{}, err
		}
		out, err := encodeRecords(b[:batch.HeaderSize], target, level, b[batch.HeaderSize:])
		return out, sum, err
	}

	// Header and CRC first, so a damaged batch is never "repaired" by
	// re-encoding it; the records are walked below, once, uncompressed.
	hdrOpts := vopts
	hdrOpts.CheckRecords, hdrOpts.RequireKeys = false, false
	if _, err := batch.Inspect(b, hdrOpts); err != nil {
		return nil, batch.Summary{}, err
	}
	data, err := batch.Decompress(src, b[batch.HeaderSize:], vopts.MaxDecompressed)
	if err != nil {
		return nil, batch.Summary{}, err
	}
	plain, err := encodeRecords(b[:batch.HeaderSize], batch.None, 0, data)
	if err != nil {
		return nil, batch.Summary{}, err
	}
	sum, err := batch.Inspect(plain, vopts)
	if err != nil {
		return nil, batch.Summary{}, err
	}
	if target == batch.None {
		return plain, sum, nil
	}
	out, err := encodeRecords(plain[:batch.HeaderSize], target, level, plain[batch.HeaderSize:])
	return out, sum, err
}

// encodeRecords returns a new batch: a copy of header with codec c, then
// records (an uncompressed record section) compressed with c at level, with
// the length and CRC set.
func encodeRecords(header []byte, c batch.Compression, level int, records []byte) ([]byte, error) {
	hint := len(records)
	if c != batch.None {
		hint = len(records)/2 + 64
	}
	out := make([]byte, batch.HeaderSize, batch.HeaderSize+hint)
	copy(out, header)
	out, err := batch.AppendCompressed(out, c, level, records)
	if err != nil {
		return nil, &recompressError{err}
	}
	if len(out)-12 > 1<<31-1 {
		return nil, &batch.Error{Code: batch.MessageTooLarge, Msg: "re-encoded batch larger than 2 GiB"}
	}
	be := binary.BigEndian
	attrs := be.Uint16(out[batch.OffAttributes:])&^batch.AttrCompressionMask | uint16(c)
	be.PutUint16(out[batch.OffAttributes:], attrs)
	be.PutUint32(out[batch.OffLength:], uint32(len(out)-12))
	batch.UpdateCRC(out)
	return out, nil
}

// recompressError is a codec failure on the broker's side (not the
// client's input): UNKNOWN_SERVER_ERROR.
type recompressError struct{ err error }

func (e *recompressError) Error() string { return "cannot re-encode batch: " + e.err.Error() }
func (e *recompressError) Unwrap() error { return e.err }

// recompressErr maps an error of recompress for batch i.
func recompressErr(i int, err error) error {
	var re *recompressError
	if errors.As(err, &re) {
		return &AppendError{Code: CodeUnknownServerError, Batch: i, Msg: re.Error(), Err: re.err}
	}
	return batchErr(i, err)
}

// splice is one re-encoded batch replacing records[from:to].
type splice struct {
	from, to int
	data     []byte
}

// applySplices returns records with each splice applied (splices in order,
// not overlapping), in a new slice of size n.
func applySplices(records []byte, sp []splice, n int) []byte {
	out := make([]byte, 0, n)
	at := 0
	for _, s := range sp {
		out = append(out, records[at:s.from]...)
		out = append(out, s.data...)
		at = s.to
	}
	return append(out, records[at:]...)
}
