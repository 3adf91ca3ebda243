package chaos

import (
	_ "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	_ "github.com/twmb/franz-go/pkg/kadm"
	_ "github.com/twmb/franz-go/pkg/kgo"
)
