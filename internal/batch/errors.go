package batch

import (
	"fmt"
	"strings"
)

// ErrorCode classifies a batch problem; KafkaCode maps it to the Kafka
// protocol error code the broker returns.
type ErrorCode int

// Error codes.
const (
	// CorruptMessage: bad CRC, truncated or inconsistent header, undecodable
	// records or compressed data.
	CorruptMessage ErrorCode = iota + 1
	// InvalidRecord: a record is well formed but breaks a rule (for example
	// a null key on a compacted topic).
	InvalidRecord
	// UnsupportedForMessageFormat: magic 0 or 1 (Kafka 4 stores only v2).
	UnsupportedForMessageFormat
	// MessageTooLarge: the batch or its decompressed records exceed a bound.
	MessageTooLarge
	// InvalidTimestamp: a timestamp outside the allowed range.
	InvalidTimestamp
	// UnsupportedCompressionType: attributes name a codec we do not know.
	UnsupportedCompressionType
)

// KafkaCode returns the Kafka protocol error code for c.
func (c ErrorCode) KafkaCode() int16 {
	switch c {
	case CorruptMessage:
		return 2
	case InvalidRecord:
		return 87
	case UnsupportedForMessageFormat:
		return 43
	case MessageTooLarge:
		return 10
	case InvalidTimestamp:
		return 32
	case UnsupportedCompressionType:
		return 76
	}
	return -1 // UNKNOWN_SERVER_ERROR
}

// String returns Kafka's name for the code.
func (c ErrorCode) String() string {
	switch c {
	case CorruptMessage:
		return "CORRUPT_MESSAGE"
	case InvalidRecord:
		return "INVALID_RECORD"
	case UnsupportedForMessageFormat:
		return "UNSUPPORTED_FOR_MESSAGE_FORMAT"
	case MessageTooLarge:
		return "MESSAGE_TOO_LARGE"
	case InvalidTimestamp:
		return "INVALID_TIMESTAMP"
	case UnsupportedCompressionType:
		return "UNSUPPORTED_COMPRESSION_TYPE"
	}
	return "UNKNOWN_SERVER_ERROR"
}

// RecordError names one bad record by its index inside the batch (Kafka's
// ProduceResponse RecordErrors).
type RecordError struct {
	Index int
	Msg   string
}

// Error is every error this package returns for bad input.
type Error struct {
	Code         ErrorCode
	Msg          string
	RecordErrors []RecordError
}

func (e *Error) Error() string {
	var sb strings.Builder
	sb.WriteString("batch: ")
	sb.WriteString(e.Code.String())
	sb.WriteString(": ")
	sb.WriteString(e.Msg)
	for i, re := range e.RecordErrors {
		if i == 3 {
			fmt.Fprintf(&sb, " (and %d more)", len(e.RecordErrors)-i)
			break
		}
		fmt.Fprintf(&sb, "; record %d: %s", re.Index, re.Msg)
	}
	return sb.String()
}

func errorf(code ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}
