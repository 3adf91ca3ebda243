package config

import "fmt"

// ErrCodeInvalidConfig is Kafka's INVALID_CONFIG error code.
const ErrCodeInvalidConfig int16 = 40

// ConfigError reports a bad config name or value. It carries Kafka error code
// INVALID_CONFIG (40).
type ConfigError struct {
	Name, Value, Msg string
}

func (e *ConfigError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("config %s: %s", e.Name, e.Msg)
	}
	return fmt.Sprintf("invalid value %q for config %s: %s", e.Value, e.Name, e.Msg)
}

// KafkaCode returns INVALID_CONFIG (40).
func (e *ConfigError) KafkaCode() int16 { return ErrCodeInvalidConfig }

// ErrCodeInvalidRequest is Kafka's INVALID_REQUEST error code.
const ErrCodeInvalidRequest int16 = 42

// RequestError reports a malformed request rather than a bad config (for
// example the same config twice in one alter request). It carries Kafka error
// code INVALID_REQUEST (42).
type RequestError struct{ Msg string }

func (e *RequestError) Error() string { return e.Msg }

// KafkaCode returns INVALID_REQUEST (42).
func (e *RequestError) KafkaCode() int16 { return ErrCodeInvalidRequest }
