package share

// DeadLetter is a record of a share partition that a group with a dead-letter queue
// (errors.deadletterqueue.topic.name, KIP-1191) archived: rejected by a consumer, or
// released for the last time once its delivery count reached the limit.
type DeadLetter struct {
	Key           Key
	Offset        int64
	DeliveryCount int16
	Rejected      bool   // else the delivery count limit was reached
	Topic         string // the group's dead-letter topic
	Copy          bool   // errors.deadletterqueue.copy.record.enable
}

// Causes of a dead letter, as Kafka writes them in the __dlq.errors.message header.
const (
	DeadLetterRejected     = "Offset rejected by client."
	DeadLetterLimitReached = "Offset delivery count exceeded the threshold."
)

// Cause is the dead letter's cause.
func (d DeadLetter) Cause() string {
	if d.Rejected {
		return DeadLetterRejected
	}
	return DeadLetterLimitReached
}

// deadLetter hands an archived record to the group's dead-letter queue, if it has
// one. It runs under p.mu: OnDeadLetter must not block.
func (p *Partition) deadLetter(offset int64, count int16, rejected bool) {
	if p.cfg.DeadLetterTopic == "" || p.cfg.OnDeadLetter == nil {
		return
	}
	p.cfg.OnDeadLetter(DeadLetter{Key: p.Key, Offset: offset, DeliveryCount: count, Rejected: rejected,
		Topic: p.cfg.DeadLetterTopic, Copy: p.cfg.DeadLetterCopy})
}
