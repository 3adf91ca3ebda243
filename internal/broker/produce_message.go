package broker

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluice-broker/sluice/internal/log"
)

// produceErrorMessage is the ErrorMessage of a failed partition in a
// Produce response. A rejected batch (log.AppendError) is described by its
// reason, the topic partition and the first rejected record, as Kafka does
// ("... in topic partition t-0"), rather than by the chain of wrapped errors
// the log returns; anything else keeps its error text.
func produceErrorMessage(err error, topic string, partition int32) *string {
	var ae *log.AppendError
	if !errors.As(err, &ae) {
		return errorMessage(err)
	}
	msg := ae.Msg
	switch {
	case msg == "" && ae.Err != nil:
		msg = ae.Err.Error()
	case msg == "":
		return errorMessage(err)
	case ae.Err != nil && len(ae.RecordErrors) == 0 && !strings.Contains(ae.Err.Error(), msg):
		msg += ": " + ae.Err.Error()
	}
	s := fmt.Sprintf("%s in topic partition %s-%d", msg, topic, partition)
	if n := len(ae.RecordErrors); n > 0 {
		s += fmt.Sprintf(" (record %d of the batch", ae.RecordErrors[0].Index)
		if n > 1 {
			s += fmt.Sprintf(" and %d more", n-1)
		}
		s += ")"
	}
	return &s
}
