package compact

import (
	"github.com/sluice-broker/sluice/internal/log"
)

// lowerCheckpointLocked lowers tp's checkpoint to the lowest end the log
// had since the cleaner last looked (log.TakeEndFloor: its end when it was
// loaded, after a crash perhaps without its un-fsynced tail, and after any
// truncation), as Apache Kafka's cleaner manager does when a log is
// truncated below its checkpoint. Without it, records appended again
// between that end and the old checkpoint (a follower refetching from its
// leader) would count as cleaned: never put in a map, they would not
// remove older records of their keys, and a tombstone among them would
// later go on its own, bringing back the value it deleted.
func (c *Cleaner) lowerCheckpointLocked(tp log.TopicPartition, l *log.Log) {
	low, ok := l.TakeEndFloor()
	if !ok {
		return
	}
	cp, has := c.checkpoints[tp]
	if !has || cp <= low {
		return
	}
	c.logger.Info("log ended below the cleaner checkpoint (truncated, or recovered without its tail); lowering the checkpoint",
		"topic", tp.Topic, "partition", tp.Partition, "checkpoint", cp, "new_checkpoint", low)
	c.checkpoints[tp] = low
	c.cpDirty = true
}
