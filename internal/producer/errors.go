package producer

import "fmt"

// Kafka protocol error codes this package returns.
const (
	CodeInvalidRecord           int16 = 87 // INVALID_RECORD
	CodeOutOfOrderSequence      int16 = 45 // OUT_OF_ORDER_SEQUENCE_NUMBER
	CodeInvalidProducerEpoch    int16 = 47 // INVALID_PRODUCER_EPOCH
	CodeKafkaStorageError       int16 = 56 // KAFKA_STORAGE_ERROR
	CodeUnknownServerError      int16 = -1 // UNKNOWN_SERVER_ERROR
	CodeInvalidTxnState         int16 = 48 // INVALID_TXN_STATE
	CodeCoordinatorFenced       int16 = 52 // TRANSACTION_COORDINATOR_FENCED
	CodeUnsupportedVersionError int16 = 35 // UNSUPPORTED_VERSION
)

// Error is a rejected batch: Code is the Kafka error code for the partition
// response, Msg the human-readable reason (sent as error_message and logged).
type Error struct {
	Code int16
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("producer: %s (error code %d)", e.Msg, e.Code) }

// KafkaCode returns the Kafka protocol error code.
func (e *Error) KafkaCode() int16 { return e.Code }

func errorf(code int16, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}
