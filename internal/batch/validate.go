package batch

import "math"

// ValidateOptions chooses how deep Validate looks and which rules apply.
// The zero value is the produce path: a client's batch, records walked only
// when uncompressed.
type ValidateOptions struct {
	// CheckRecords walks the records of compressed batches too
	// (decompressing them). Uncompressed batches are always walked: it is
	// cheap and Kafka does the same.
	CheckRecords bool
	// RequireKeys rejects records with a null key (compacted topics) with
	// INVALID_RECORD and one RecordError per offending record. It implies
	// CheckRecords. Control batches are exempt.
	RequireKeys bool
	// MaxDecompressed bounds the decompressed record bytes;
	// 0 means DefaultMaxDecompressed. Exceeding it is MESSAGE_TOO_LARGE.
	MaxDecompressed int
	// FromLog relaxes the produce rules for batches read back from a log
	// (recovery, the cleaner): control batches are allowed, a batch may hold
	// no records, record offset deltas need only increase strictly within
	// LastOffsetDelta (compaction leaves gaps), MaxTimestamp is not compared
	// with the records, and producer fields are not checked.
	FromLog bool
	// AllowControl accepts control batches on the produce path (for
	// broker-written transaction markers). Clients may not write them.
	AllowControl bool
}

// Summary is what Inspect learned about a valid batch.
type Summary struct {
	Header Header
	// RecordsChecked reports whether the records were walked. When they
	// were, MinTimestamp and MaxTimestamp are the smallest and largest
	// record timestamps; otherwise they are the header's BaseTimestamp and
	// MaxTimestamp. For LogAppendTime batches both are the header's
	// MaxTimestamp.
	RecordsChecked bool
	MinTimestamp   int64
	MaxTimestamp   int64
	// Uncompressed is the size of the record section after decompression
	// (when records were walked).
	Uncompressed int
}

// Validate fully checks one whole batch b (len(b) must be its TotalSize) as
// a broker must before storing it. It returns nil or an *Error whose Code
// maps to the Kafka error to return:
//
//   - header: magic 2 (0/1 → UNSUPPORTED_FOR_MESSAGE_FORMAT), Length equal
//     to len(b)-12, CRC-32C, known codec (else UNSUPPORTED_COMPRESSION_TYPE)
//     → CORRUPT_MESSAGE otherwise;
//   - counts: RecordCount >= 1 and LastOffsetDelta == RecordCount-1;
//     no control batch from a client; a producer id needs a base sequence
//     and a transactional batch needs a producer id → INVALID_RECORD;
//   - records (see ValidateOptions for when): each record's length matches
//     its fields, varints within 5 (int32) or 10 (int64) bytes, key, value
//     and header lengths within the record, no null header key, header
//     count sane, offsetDelta == index, exactly RecordCount records and no
//     trailing bytes → INVALID_RECORD (a MaxTimestamp that disagrees with
//     the records is tolerated, as Kafka tolerates it); timestamps overflowing int64 →
//     INVALID_TIMESTAMP; corrupt compressed data → CORRUPT_MESSAGE;
//     decompressed size over the bound → MESSAGE_TOO_LARGE.
func Validate(b []byte, opts ValidateOptions) error {
	_, err := Inspect(b, opts)
	return err
}

// Inspect is Validate returning, for a valid batch, what it learned.
func Inspect(b []byte, opts ValidateOptions) (Summary, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Summary{}, err
	}
	if h.TotalSize() != len(b) {
		return Summary{}, errorf(CorruptMessage, "batch length field gives %d bytes, have %d", h.TotalSize(), len(b))
	}
	// An uncompressed batch other than a control batch has its CRC computed
	// and its records walked in one pass (crcWalk); the walk's answer is used
	// only once the header checks below pass.
	var got uint32
	var walkedMin, walkedMax int64
	walked := h.Compression() == None && !h.IsControl() && h.RecordCount >= 0
	walkedOK := false
	if walked {
		got, walkedMin, walkedMax, walkedOK = crcWalk(b, int(h.RecordCount), h.BaseTimestamp, opts.RequireKeys)
	} else {
		got = ComputeCRC(b)
	}
	if got != h.CRC {
		return Summary{}, errorf(CorruptMessage, "CRC mismatch: header has %08x, batch computes to %08x", h.CRC, got)
	}
	c := h.Compression()
	if c > Zstd {
		return Summary{}, errorf(UnsupportedCompressionType, "unknown compression codec %d", int(c))
	}
	if h.RecordCount < 0 {
		return Summary{}, errorf(InvalidRecord, "negative record count %d", h.RecordCount)
	}
	if opts.FromLog {
		if h.LastOffsetDelta < 0 || int64(h.RecordCount) > int64(h.LastOffsetDelta)+1 {
			return Summary{}, errorf(InvalidRecord, "record count %d does not fit last offset delta %d", h.RecordCount, h.LastOffsetDelta)
		}
	} else {
		if h.RecordCount < 1 {
			return Summary{}, errorf(InvalidRecord, "invalid record count %d", h.RecordCount)
		}
		if h.LastOffsetDelta != h.RecordCount-1 {
			return Summary{}, errorf(InvalidRecord, "inconsistent batch: last offset delta %d with %d records", h.LastOffsetDelta, h.RecordCount)
		}
		if h.IsControl() && !opts.AllowControl {
			return Summary{}, errorf(InvalidRecord, "clients are not allowed to write control batches")
		}
		if h.ProducerID >= 0 && h.BaseSequence < 0 && !h.IsControl() { // markers carry sequence -1
			return Summary{}, errorf(InvalidRecord, "invalid base sequence %d for producer id %d", h.BaseSequence, h.ProducerID)
		}
		if h.IsTransactional() && h.ProducerID < 0 {
			return Summary{}, errorf(InvalidRecord, "transactional batch without a producer id")
		}
	}

	s := Summary{Header: h, MinTimestamp: h.BaseTimestamp, MaxTimestamp: h.MaxTimestamp}
	if h.TimestampType() == LogAppendTime {
		s.MinTimestamp = h.MaxTimestamp
	}
	if c != None && !opts.CheckRecords && !opts.RequireKeys {
		return s, nil
	}

	data, err := recordBytes(b, h, opts.MaxDecompressed)
	if err != nil {
		return Summary{}, err
	}
	if !h.IsControl() {
		// A batch from a log (a follower's fetch, recovery) may have gaps in
		// its offset deltas after compaction, which the lean walk does not
		// take; every other one has the deltas 0, 1, … of a client's batch,
		// which the full walk accepts from a log too (the header check above
		// has the record count within the last offset delta).
		if walked {
			if walkedOK {
				return s.checked(data, walkedMin, walkedMax), nil
			}
		} else if minTS, maxTS, ok := walkProduce(data, int(h.RecordCount), h.BaseTimestamp, opts.RequireKeys); ok {
			return s.checked(data, minTS, maxTS), nil
		}
		// Walk again below to find and describe the fault, or the gaps.
	}
	minTS, maxTS, err := walkRecords(data, h, opts)
	if err != nil {
		return Summary{}, err
	}
	return s.checked(data, minTS, maxTS), nil
}

// walkRecords checks every record of the record section data of a batch with
// header h, as Validate describes, and returns the smallest and largest record
// timestamps. Every fault gets its own message.
func walkRecords(data []byte, h Header, opts ValidateOptions) (minTS, maxTS int64, err error) {
	minTS, maxTS = math.MaxInt64, math.MinInt64
	prev := int32(-1)
	var keyErrs []RecordError
	rd := recordReader{data: data, count: int(h.RecordCount)}
	var r Record
	for i := 0; ; i++ {
		ok, err := rd.next(&r)
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			break
		}
		if opts.FromLog {
			if r.OffsetDelta <= prev || r.OffsetDelta > h.LastOffsetDelta {
				return 0, 0, errorf(InvalidRecord, "record %d: offset delta %d out of order (previous %d, last %d)", i, r.OffsetDelta, prev, h.LastOffsetDelta)
			}
		} else if int(r.OffsetDelta) != i {
			return 0, 0, errorf(InvalidRecord, "record %d: offset delta %d, want %d", i, r.OffsetDelta, i)
		}
		prev = r.OffsetDelta

		d := r.TimestampDelta
		if (d > 0 && h.BaseTimestamp > math.MaxInt64-d) || (d < 0 && h.BaseTimestamp < math.MinInt64-d) {
			return 0, 0, errorf(InvalidTimestamp, "record %d: timestamp delta %d overflows base timestamp %d", i, d, h.BaseTimestamp)
		}
		ts := h.BaseTimestamp + d
		minTS, maxTS = min(minTS, ts), max(maxTS, ts)

		if h.IsControl() {
			if len(r.Key) < 4 {
				return 0, 0, errorf(InvalidRecord, "record %d: control record key of %d bytes, need at least 4", i, len(r.Key))
			}
		} else if opts.RequireKeys && r.Key == nil {
			keyErrs = append(keyErrs, RecordError{Index: i, Msg: "compacted topic cannot accept a record without a key"})
		}
	}
	if len(keyErrs) > 0 {
		return 0, 0, &Error{Code: InvalidRecord, Msg: "compacted topic cannot accept records without a key", RecordErrors: keyErrs}
	}
	return minTS, maxTS, nil
}

// checked completes s for a batch whose record section data was walked and
// whose records' timestamps range from minTS to maxTS.
func (s Summary) checked(data []byte, minTS, maxTS int64) Summary {
	s.RecordsChecked = true
	s.Uncompressed = len(data)
	if s.Header.RecordCount > 0 && s.Header.TimestampType() == CreateTime {
		// A header MaxTimestamp that disagrees with the records is tolerated,
		// as Kafka tolerates it; the summary reports the records' own range.
		s.MinTimestamp, s.MaxTimestamp = minTS, maxTS
	}
	return s
}
