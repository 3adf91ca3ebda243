// Package features holds Sluice's feature flags as Apache Kafka defines
// them (KIP-584, KIP-1022): the features this broker supports with their
// version ranges, the finalized level of each, the rules an UpdateFeatures
// request must follow, and the durable single-node store of the finalized
// levels. On a cluster the finalized levels are a metadata record
// (metadata.SetFeatures) instead; the rules are the same.
//
// It owns: the table of supported features, validation of updates, the
// file features.json of a single node's data directory (written through
// vfs). It must not touch sockets, the metadata quorum or any partition.
package features

import (
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The features Sluice reports.
const (
	MetadataVersion    = "metadata.version"
	KRaftVersion       = "kraft.version"
	TransactionVersion = "transaction.version"
	GroupVersion       = "group.version"
	ShareVersion       = "share.version"
	StreamsVersion     = "streams.version"
	// EligibleLeaderReplicasVersion 1 turns on KIP-966's eligible leader
	// replicas on a cluster (internal/controller/elr.go).
	EligibleLeaderReplicasVersion = "eligible.leader.replicas.version"
)

// Feature is one supported feature: its version range, the level a new
// data directory (or cluster) finalizes, and the level of one formatted
// before Sluice finalized the feature by default.
type Feature struct {
	Name     string
	Min, Max int16
	// Default is the level a new cluster (its first SetFeatures record,
	// committed with its cluster id) or a new data directory finalizes.
	Default int16
	// Unrecorded is the level of a cluster or data directory whose
	// finalized levels do not mention the feature: one formatted by an
	// older Sluice. It equals Default, except for a feature a newer Sluice
	// turns on for new clusters only, which an existing cluster keeps off
	// until an UpdateFeatures upgrade (kafka-features upgrade), as Kafka
	// keeps an existing cluster's levels across a software upgrade.
	Unrecorded int16
	// Requires names the metadata.version level that levels of 1 and
	// above need (0: none), as Kafka's feature dependencies.
	Requires int16
	// Downgradable features accept safe and unsafe downgrades, down to 0
	// (which disables the feature); metadata.version accepts none, as in
	// Kafka 4.
	Downgradable bool
}

// Supported lists the features in the order ApiVersions reports them.
//
// metadata.version spans Kafka 4's range (7 = 3.3-IV3 up to 33 = 4.4-IV2)
// and is finalized at its latest: Sluice's metadata records do not depend on
// it. kraft.version stays at 0 although cluster nodes serve KIP-853's
// AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter (docs/cluster.md): Sluice keeps its voter
// set in raft's own configuration, not in Kafka's kraft.version records. transaction.version 2 is KIP-890 part 2, group.version 1 the
// KIP-848 consumer protocol, share.version 1 share groups (KIP-932),
// streams.version 1 the Streams rebalance protocol (KIP-1071).
var Supported = []Feature{
	{Name: MetadataVersion, Min: 7, Max: 33, Default: 33, Unrecorded: 33},
	{Name: KRaftVersion, Min: 0, Max: 0, Default: 0, Unrecorded: 0},
	{Name: TransactionVersion, Min: 0, Max: 2, Default: 2, Unrecorded: 2, Downgradable: true},
	{Name: GroupVersion, Min: 0, Max: 1, Default: 1, Unrecorded: 1, Downgradable: true},
	{Name: ShareVersion, Min: 0, Max: 1, Default: 1, Unrecorded: 1, Downgradable: true},
	{Name: StreamsVersion, Min: 0, Max: 1, Default: 1, Unrecorded: 1, Downgradable: true},
	// On for new clusters, as Kafka 4.1+ finalizes version 1 when it
	// formats one (its bootstrap metadata.version is 4.1-IV0); a cluster
	// formatted by an older Sluice keeps 0 until upgraded. Version 1
	// needs metadata.version 23 (4.0-IV1), as in Kafka.
	{Name: EligibleLeaderReplicasVersion, Min: 0, Max: 1, Default: 1, Unrecorded: 0, Requires: 23, Downgradable: true},
}

// Lookup returns the supported feature named name.
func Lookup(name string) (Feature, bool) {
	for _, f := range Supported {
		if f.Name == name {
			return f, true
		}
	}
	return Feature{}, false
}

// Levels maps a feature name to its finalized level (0: not finalized,
// the feature is off).
type Levels map[string]int16

// Defaults returns the finalized levels of a new data directory.
func Defaults() Levels {
	l := make(Levels, len(Supported))
	for _, f := range Supported {
		l[f.Name] = f.Default
	}
	return l
}

// WithDefaults returns stored completed with the Unrecorded level of every
// supported feature it does not mention (one added by a newer Sluice), and
// without features Sluice no longer supports.
func WithDefaults(stored Levels) Levels {
	l := make(Levels, len(Supported))
	for _, f := range Supported {
		l[f.Name] = f.Unrecorded
	}
	for name, v := range stored {
		if _, ok := l[name]; ok {
			l[name] = v
		}
	}
	return l
}

// Finalized returns a cluster's finalized levels from its metadata:
// recorded, the levels of its last SetFeatures record (nil: none), and
// formatted, whether it has a cluster id. A new cluster records its
// default levels with its cluster id, so a cluster with an id and no
// SetFeatures record was formatted by an older Sluice and has the
// Unrecorded levels; one without an id yet has the defaults.
func Finalized(recorded Levels, formatted bool) Levels {
	if recorded == nil && !formatted {
		return Defaults()
	}
	return WithDefaults(recorded)
}

// Level returns the finalized level of name (0 when absent).
func (l Levels) Level(name string) int16 { return l[name] }

// Clone returns a copy.
func (l Levels) Clone() Levels { return maps.Clone(l) }

// UpgradeType is UpdateFeatures' UpgradeType (v1+).
type UpgradeType int8

// The upgrade types.
const (
	Upgrade         UpgradeType = 1
	SafeDowngrade   UpgradeType = 2
	UnsafeDowngrade UpgradeType = 3
)

// Update is one feature change of an UpdateFeatures request.
type Update struct {
	Name  string
	Level int16
	Type  UpgradeType
}

// Error is a refused update: a Kafka error code and message.
type Error struct {
	Code int16
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func invalid(format string, args ...any) *Error {
	return &Error{Code: kerr.InvalidUpdateVersion.Code, Msg: fmt.Sprintf(format, args...)}
}

// Apply checks updates against the current levels and returns the levels
// they lead to. An update is refused (the whole request, as Kafka's
// controller refuses it) with INVALID_REQUEST for a malformed request
// (duplicate feature, unknown upgrade type, negative level) and
// INVALID_UPDATE_VERSION for an unknown feature, a level outside the
// supported range, a downgrade without a downgrade type, or a downgrade of
// a feature that allows none.
func Apply(cur Levels, updates []Update) (Levels, *Error) {
	next := cur.Clone()
	seen := make(map[string]bool, len(updates))
	for _, u := range updates {
		if u.Name == "" {
			return nil, &Error{Code: kerr.InvalidRequest.Code, Msg: "feature names must not be empty"}
		}
		if seen[u.Name] {
			return nil, &Error{Code: kerr.InvalidRequest.Code, Msg: fmt.Sprintf("feature %s appears more than once in the request", u.Name)}
		}
		seen[u.Name] = true
		if u.Type < Upgrade || u.Type > UnsafeDowngrade {
			return nil, &Error{Code: kerr.InvalidRequest.Code, Msg: fmt.Sprintf("invalid upgrade type %d for feature %s", u.Type, u.Name)}
		}
		if u.Level < 0 {
			return nil, invalid("a feature version cannot be less than 0 (feature %s)", u.Name)
		}
		f, ok := Lookup(u.Name)
		if !ok {
			return nil, invalid("invalid update version %d for feature %s: this broker does not support the feature", u.Level, u.Name)
		}
		have := cur.Level(u.Name)
		if u.Level != 0 && (u.Level < f.Min || u.Level > f.Max) {
			return nil, invalid("invalid update version %d for feature %s: this broker supports versions %d-%d", u.Level, u.Name, f.Min, f.Max)
		}
		if u.Level == 0 && f.Min > 0 {
			return nil, invalid("feature %s cannot be removed", u.Name)
		}
		if u.Level < have {
			switch {
			case u.Type == Upgrade:
				return nil, invalid("can't downgrade the version of feature %s from %d to %d without setting the upgrade type to either safe or unsafe downgrade", u.Name, have, u.Level)
			case !f.Downgradable:
				return nil, invalid("downgrading feature %s from %d to %d is not supported", u.Name, have, u.Level)
			}
		}
		if u.Level > have && u.Type != Upgrade {
			return nil, invalid("can't upgrade feature %s from %d to %d with a downgrade type", u.Name, have, u.Level)
		}
		next[u.Name] = u.Level
	}
	for _, f := range Supported {
		if f.Requires > 0 && next.Level(f.Name) >= 1 && seen[f.Name] && next.Level(MetadataVersion) < f.Requires {
			return nil, invalid("invalid update version %d for feature %s: it requires %s at level %d or above, finalized at %d",
				next.Level(f.Name), f.Name, MetadataVersion, f.Requires, next.Level(MetadataVersion))
		}
	}
	return next, nil
}

// Names returns the feature names of l, sorted.
func (l Levels) Names() []string {
	return slices.Sorted(maps.Keys(l))
}
