package replica

// RestartAt empties this follower's log and restarts it at offset (the
// leader's log start), to copy the leader's log again from there.
func (p *Partition) RestartAt(offset int64) error { return p.log.TruncateFullyAndStartAt(offset) }
