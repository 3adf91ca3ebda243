package broker

import (
	"strconv"
	"strings"
	"time"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/log"
)

// installCheckpointIntervals gives the log manager Kafka's cadence for the
// data directory's checkpoints (log.flush.offset.checkpoint.interval.ms and
// log.flush.start.offset.checkpoint.interval.ms, 60 s by default): with many
// partitions, writing them on every housekeeping pass cost CPU in
// proportion to the partitions (internal/log/checkpoint_interval.go).
func installCheckpointIntervals(cfg *config.Broker, o *log.ManagerOptions) {
	ms := func(name string) time.Duration {
		v, err := strconv.ParseInt(strings.TrimSpace(cfg.Raw[name]), 10, 64)
		if err != nil || v < 0 {
			v = 60000
		}
		return time.Duration(v) * time.Millisecond
	}
	o.RecoveryPointCheckpointInterval = ms("log.flush.offset.checkpoint.interval.ms")
	o.LogStartCheckpointInterval = ms("log.flush.start.offset.checkpoint.interval.ms")
}
