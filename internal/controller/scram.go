package controller

import (
	"context"

	"github.com/sluice-broker/sluice/internal/metadata"
)

// ScramChange upserts (Credential set) or deletes (Credential nil) one
// user's credential for one SCRAM mechanism (its name). The broker has
// validated it and derived the stored and server keys: the controller
// never sees a password.
type ScramChange struct {
	User       string                    `json:"user"`
	Mechanism  string                    `json:"mechanism"`
	Credential *metadata.ScramCredential `json:"credential,omitempty"`
}

// AlterScramRequest is Kafka's AlterUserScramCredentials, validated.
type AlterScramRequest struct {
	Changes []ScramChange `json:"changes"`
}

// AlterScram records the credential changes, all in one batch.
func (c *Controller) AlterScram(ctx context.Context, req AlterScramRequest) (OffsetResponse, error) {
	im, err := c.begin()
	if err != nil {
		return OffsetResponse{}, err
	}
	defer c.mu.Unlock()
	recs := make([]metadata.Record, 0, len(req.Changes))
	for _, ch := range req.Changes {
		if ch.Credential == nil {
			if _, ok := im.Scram[ch.User][ch.Mechanism]; !ok {
				continue // deleting a missing credential changes nothing
			}
		}
		recs = append(recs, metadata.Record{Type: metadata.SetScramCredential, User: ch.User, Mechanism: ch.Mechanism, Scram: ch.Credential})
	}
	if len(recs) == 0 {
		return OffsetResponse{Offset: im.Offset}, nil
	}
	off, err := c.commit(ctx, recs...)
	if err != nil {
		return OffsetResponse{}, err
	}
	return OffsetResponse{Offset: off}, nil
}
