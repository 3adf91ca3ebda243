package log

import (
	"errors"
	"fmt"

	"github.com/sluice-broker/sluice/internal/batch"
)

// Kafka protocol error codes the log produces. KafkaCode maps any error this
// package returns to one of them.
const (
	CodeUnknownServerError          int16 = -1
	CodeOffsetOutOfRange            int16 = 1
	CodeCorruptMessage              int16 = 2
	CodeMessageTooLarge             int16 = 10
	CodeRecordListTooLarge          int16 = 18
	CodeInvalidTimestamp            int16 = 32
	CodeUnsupportedForMessageFormat int16 = 43
	CodeOutOfOrderSequenceNumber    int16 = 45
	CodeDuplicateSequenceNumber     int16 = 46
	CodeInvalidProducerEpoch        int16 = 47
	CodeKafkaStorageError           int16 = 56
	CodeInvalidRecord               int16 = 87
)

// ErrOffsetOutOfRange is returned (wrapped in *OffsetOutOfRangeError) by Read
// and TruncatePrefix for an offset outside [log start, log end].
var ErrOffsetOutOfRange = errors.New("log: offset out of range")

// ErrClosed is returned by operations on a closed or deleted log.
var ErrClosed = errors.New("log: closed")

// OffsetOutOfRangeError says which offset was asked for and what the log held.
type OffsetOutOfRangeError struct {
	Offset, LogStartOffset, LogEndOffset int64
}

func (e *OffsetOutOfRangeError) Error() string {
	return fmt.Sprintf("log: offset %d out of range [%d, %d]", e.Offset, e.LogStartOffset, e.LogEndOffset)
}

// Unwrap makes errors.Is(err, ErrOffsetOutOfRange) true.
func (e *OffsetOutOfRangeError) Unwrap() error { return ErrOffsetOutOfRange }

// KafkaCode returns OFFSET_OUT_OF_RANGE.
func (e *OffsetOutOfRangeError) KafkaCode() int16 { return CodeOffsetOutOfRange }

// AppendError is every error Append returns: Code is the Kafka error code
// for the whole partition, Batch the index of the offending batch in the
// produce (-1 if none), RecordErrors the per-record details of
// INVALID_RECORD, Err the cause (a *batch.Error, an I/O error, ...).
type AppendError struct {
	Code         int16
	Batch        int
	Msg          string
	RecordErrors []batch.RecordError
	Err          error
}

func (e *AppendError) Error() string {
	s := fmt.Sprintf("log: append: %s (code %d)", e.Msg, e.Code)
	if e.Batch >= 0 {
		s = fmt.Sprintf("log: append: batch %d: %s (code %d)", e.Batch, e.Msg, e.Code)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *AppendError) Unwrap() error { return e.Err }

// KafkaCode returns e.Code.
func (e *AppendError) KafkaCode() int16 { return e.Code }

// StorageError wraps an I/O failure (including ENOSPC); the broker answers
// KAFKA_STORAGE_ERROR.
type StorageError struct {
	Op  string
	Err error
}

func (e *StorageError) Error() string { return "log: storage: " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the I/O error.
func (e *StorageError) Unwrap() error { return e.Err }

// KafkaCode returns KAFKA_STORAGE_ERROR.
func (e *StorageError) KafkaCode() int16 { return CodeKafkaStorageError }

// KafkaCode maps an error returned by this package (or by internal/batch) to
// the Kafka error code the broker should send: 0 for nil,
// UNKNOWN_SERVER_ERROR for anything it does not know.
func KafkaCode(err error) int16 {
	if err == nil {
		return 0
	}
	var coded interface{ KafkaCode() int16 }
	if errors.As(err, &coded) {
		return coded.KafkaCode()
	}
	var be *batch.Error
	if errors.As(err, &be) {
		return be.Code.KafkaCode()
	}
	if errors.Is(err, ErrOffsetOutOfRange) {
		return CodeOffsetOutOfRange
	}
	return CodeUnknownServerError
}

func storageErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *StorageError
	if errors.As(err, &se) {
		return err
	}
	return &StorageError{Op: op, Err: err}
}
