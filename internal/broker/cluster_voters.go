package broker

// registerVoterHandlers registers the peer methods that change the quorum's
// voters.
func (c *clusterNode) registerVoterHandlers() {}
