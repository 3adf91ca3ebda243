package broker

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is an error that carries a Kafka error code to the client; its
// message becomes the response's error_message where the API has one.
type Error struct {
	Code int16
	Msg  string
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return kerr.ErrorForCode(e.Code).Error()
	}
	return e.Msg
}

// KafkaCode returns the Kafka error code.
func (e *Error) KafkaCode() int16 { return e.Code }

// errorf returns an *Error with code and a formatted message.
func errorf(code *kerr.Error, format string, args ...any) *Error {
	return &Error{Code: code.Code, Msg: fmt.Sprintf(format, args...)}
}

// kafkaCoder is implemented by every error type that knows its Kafka code
// (*Error, config.ConfigError, log errors, batch errors).
type kafkaCoder interface{ KafkaCode() int16 }

// errorCode maps err to a Kafka error code: 0 for nil, the code of the first
// error in the chain that knows one, else UNKNOWN_SERVER_ERROR (-1).
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var kc kafkaCoder
	if errors.As(err, &kc) {
		return kc.KafkaCode()
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// errorMessage returns the message to put in a response's error_message: nil
// for nil, else err's text.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
