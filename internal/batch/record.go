package batch

import "fmt"

// RecordHeader is one record header. A header key is never null; a nil Value
// is a null header value.
type RecordHeader struct {
	Key   string
	Value []byte
}

// Record is one decoded v2 record. Key and Value alias the batch (or the
// decompressed buffer) they were decoded from; copy them to keep them past
// the batch's lifetime.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte // nil = null key
	Value          []byte // nil = null value (tombstone)
	Headers        []RecordHeader
}

// Offset returns the absolute offset of r inside the batch with header h.
func (h Header) Offset(r *Record) int64 { return h.BaseOffset + int64(r.OffsetDelta) }

// Timestamp returns the timestamp of r inside the batch with header h: the
// batch's MaxTimestamp for LogAppendTime batches, else BaseTimestamp plus
// the record's delta.
func (h Header) Timestamp(r *Record) int64 {
	if h.TimestampType() == LogAppendTime {
		return h.MaxTimestamp
	}
	return h.BaseTimestamp + r.TimestampDelta
}

// DefaultMaxDecompressed bounds the decompressed records of one batch when a
// caller passes 0 (or a negative bound).
const DefaultMaxDecompressed = 64 << 20

// minRecordSize is the smallest encoding of a record: length, attributes,
// timestampDelta, offsetDelta, key length, value length, header count.
const minRecordSize = 7

// Records decodes every record of the whole batch b (len(b) must equal the
// batch's TotalSize), decompressing if needed with the output bounded by
// maxDecompressed (<= 0 means DefaultMaxDecompressed). It checks the record
// structure (lengths, varints, record count, no trailing bytes) but not the
// CRC or producer rules; call Validate for those.
func Records(b []byte, maxDecompressed int) ([]Record, error) {
	h, data, err := openRecords(b, maxDecompressed)
	if err != nil {
		return nil, err
	}
	n := int(h.RecordCount)
	if limit := len(data) / minRecordSize; n > limit {
		n = limit // a bad count is reported by walkRecords
	}
	recs := make([]Record, 0, n)
	rd := recordReader{data: data, count: int(h.RecordCount), headers: true}
	for {
		var r Record
		ok, err := rd.next(&r)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// ForEachRecord calls fn for each record of the whole batch b, in order,
// decompressing as Records does. The *Record (including its Headers slice)
// is reused between calls: copy what must outlive a call. An error from fn
// stops the iteration and is returned as is.
func ForEachRecord(b []byte, maxDecompressed int, fn func(r *Record) error) error {
	h, data, err := openRecords(b, maxDecompressed)
	if err != nil {
		return err
	}
	rd := recordReader{data: data, count: int(h.RecordCount), headers: true}
	var r Record
	for {
		ok, err := rd.next(&r)
		if !ok {
			return err
		}
		if err := fn(&r); err != nil {
			return err
		}
	}
}

// openRecords parses the header of the whole batch b and returns the record
// bytes, decompressed if needed.
func openRecords(b []byte, maxDecompressed int) (Header, []byte, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, nil, err
	}
	if h.TotalSize() != len(b) {
		return h, nil, errorf(CorruptMessage, "batch length field gives %d bytes, have %d", h.TotalSize(), len(b))
	}
	if h.RecordCount < 0 {
		return h, nil, errorf(InvalidRecord, "negative record count %d", h.RecordCount)
	}
	data, err := recordBytes(b, h, maxDecompressed)
	return h, data, err
}

// recordBytes returns the record section of the whole batch b, decompressed
// if the header says so.
func recordBytes(b []byte, h Header, maxDecompressed int) ([]byte, error) {
	c := h.Compression()
	if c > Zstd {
		return nil, errorf(UnsupportedCompressionType, "unknown compression codec %d", int(c))
	}
	raw := b[HeaderSize:]
	if c == None {
		return raw, nil
	}
	return Decompress(c, raw, maxDecompressed)
}

// recordReader steps through the records of a decoded record section. It
// fails if the section holds fewer records than declared, or bytes remain
// after the last one. Structural problems are INVALID_RECORD, as Kafka
// reports them. With headers false, record headers are checked but not
// decoded (Record.Headers stays empty), which saves their allocations.
type recordReader struct {
	data    []byte
	count   int
	headers bool
	pos, i  int
}

// next decodes the next record into r. It returns false with a nil error
// after the last record.
func (rd *recordReader) next(r *Record) (bool, error) {
	if rd.i >= rd.count {
		if rd.pos != len(rd.data) {
			return false, errorf(InvalidRecord, "%d bytes remain after the %d declared records", len(rd.data)-rd.pos, rd.count)
		}
		return false, nil
	}
	if rd.pos >= len(rd.data) {
		return false, errorf(InvalidRecord, "batch declares %d records but holds only %d", rd.count, rd.i)
	}
	n, msg := parseRecord(rd.data[rd.pos:], r, rd.headers)
	if msg != "" {
		return false, errorf(InvalidRecord, "record %d: %s", rd.i, msg)
	}
	rd.pos += n
	rd.i++
	return true, nil
}

// parseRecord decodes the record at the start of data into r. It returns the
// bytes consumed, or a non-empty message describing why the record is
// malformed. r.Headers is reused (truncated and appended to) when headers
// is true, and left empty otherwise.
func parseRecord(data []byte, r *Record, headers bool) (int, string) {
	length, n := readVarint(data)
	if n <= 0 {
		return 0, "bad record length varint"
	}
	if length < 0 || int(length) > len(data)-n {
		return 0, fmt.Sprintf("record length %d exceeds the %d bytes left", length, len(data)-n)
	}
	body := data[n : n+int(length)]
	total := n + int(length)

	if len(body) < 1 {
		return 0, "record too short for attributes"
	}
	r.Attributes = int8(body[0])
	p := 1

	ts, m := readVarlong(body[p:])
	if m <= 0 {
		return 0, "bad timestampDelta varint"
	}
	r.TimestampDelta = ts
	p += m

	od, m := readVarint(body[p:])
	if m <= 0 {
		return 0, "bad offsetDelta varint"
	}
	r.OffsetDelta = od
	p += m

	var msg string
	if r.Key, p, msg = readBytesField(body, p, "key"); msg != "" {
		return 0, msg
	}
	if r.Value, p, msg = readBytesField(body, p, "value"); msg != "" {
		return 0, msg
	}

	nh, m := readVarint(body[p:])
	if m <= 0 {
		return 0, "bad header count varint"
	}
	p += m
	if nh < 0 {
		return 0, fmt.Sprintf("invalid header count %d", nh)
	}
	if int(nh) > (len(body)-p)/2 { // each header takes at least two bytes
		return 0, fmt.Sprintf("header count %d exceeds the record size", nh)
	}
	r.Headers = r.Headers[:0]
	for j := 0; j < int(nh); j++ {
		kl, m := readVarint(body[p:])
		if m <= 0 {
			return 0, fmt.Sprintf("header %d: bad key length varint", j)
		}
		p += m
		if kl < 0 || int(kl) > len(body)-p {
			return 0, fmt.Sprintf("header %d: invalid key length %d", j, kl)
		}
		key := body[p : p+int(kl)]
		p += int(kl)
		var val []byte
		if val, p, msg = readBytesField(body, p, "header value"); msg != "" {
			return 0, fmt.Sprintf("header %d: %s", j, msg)
		}
		if headers {
			r.Headers = append(r.Headers, RecordHeader{Key: string(key), Value: val})
		}
	}
	if p != len(body) {
		return 0, fmt.Sprintf("record length %d but fields take %d bytes", len(body), p)
	}
	return total, ""
}

// readBytesField reads a varint length (-1 = null) and that many bytes from
// body at p. The returned slice has its capacity clipped so appending to it
// cannot overwrite the batch.
func readBytesField(body []byte, p int, what string) ([]byte, int, string) {
	l, m := readVarint(body[p:])
	if m <= 0 {
		return nil, p, "bad " + what + " length varint"
	}
	p += m
	if l == -1 {
		return nil, p, ""
	}
	if l < -1 || int(l) > len(body)-p {
		return nil, p, fmt.Sprintf("invalid %s length %d", what, l)
	}
	end := p + int(l)
	return body[p:end:end], end, ""
}
