package broker

// loadGroupPartition loads a __consumer_offsets partition into the group
// coordinator, then the share groups it holds into the share manager
// (share-group membership, internal/share/membership.go).
func (b *Broker) loadGroupPartition(p int32) error {
	if err := b.groups.LoadPartition(p); err != nil {
		return err
	}
	if b.shares != nil {
		b.shares.LoadMembership(b.groups.ShareRecordsIn(p))
	}
	return nil
}
