package compact

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// rawRecord is one record of a batch as encoded, found without decoding
// its headers: the cleaner copies survivors byte for byte.
type rawRecord struct {
	raw         []byte // the whole record, length varint included
	body        []byte // after the length varint
	tsDelta     int64
	tsEnd       int // index in body just past the timestamp delta
	offsetDelta int32
	key         []byte // nil = null key
	nullValue   bool
}

var errBadRecord = errors.New("malformed record")

// forEachRawRecord walks the encoded records in data (an uncompressed
// record section holding count records) and calls fn for each. rec is
// reused between calls.
func forEachRawRecord(data []byte, count int32, fn func(r *rawRecord) error) error {
	var r rawRecord
	pos := 0
	for i := int32(0); i < count; i++ {
		if err := parseRawRecord(data[pos:], &r); err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		pos += len(r.raw)
		if err := fn(&r); err != nil {
			return err
		}
	}
	if pos != len(data) {
		return fmt.Errorf("%d bytes after the %d declared records: %w", len(data)-pos, count, errBadRecord)
	}
	return nil
}

func parseRawRecord(data []byte, r *rawRecord) error {
	length, n := binary.Varint(data)
	if n <= 0 || length < 1 || length > int64(len(data)-n) {
		return errBadRecord
	}
	body := data[n : n+int(length)]
	r.raw = data[:n+int(length)]
	r.body = body
	p := 1 // attributes
	ts, m := binary.Varint(body[p:])
	if m <= 0 {
		return errBadRecord
	}
	r.tsDelta = ts
	p += m
	r.tsEnd = p
	od, m := binary.Varint(body[p:])
	if m <= 0 || od < 0 || od > 1<<31-1 {
		return errBadRecord
	}
	r.offsetDelta = int32(od)
	p += m
	kl, m := binary.Varint(body[p:])
	if m <= 0 || kl < -1 || kl > int64(len(body)-p-m) {
		return errBadRecord
	}
	p += m
	r.key = nil
	if kl >= 0 {
		r.key = body[p : p+int(kl) : p+int(kl)]
		p += int(kl)
	}
	vl, m := binary.Varint(body[p:])
	if m <= 0 || vl < -1 || vl > int64(len(body)-p-m) {
		return errBadRecord
	}
	r.nullValue = vl == -1
	return nil
}

// appendRetimed appends r re-encoded with a new timestamp delta (the rest of
// the record is copied as is).
func appendRetimed(dst []byte, r *rawRecord, tsDelta int64) []byte {
	var tmp [binary.MaxVarintLen64]byte
	tn := binary.PutVarint(tmp[:], tsDelta)
	rest := r.body[r.tsEnd:]
	bodyLen := 1 + tn + len(rest)
	dst = binary.AppendVarint(dst, int64(bodyLen))
	dst = append(dst, r.body[0])
	dst = append(dst, tmp[:tn]...)
	return append(dst, rest...)
}
