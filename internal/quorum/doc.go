// Package quorum is Sluice's metadata quorum: a thin wrapper over etcd
// raft's RawNode (go.etcd.io/raft/v3). Every consensus rule — election,
// log matching, the commit rule, CheckQuorum and PreVote — is etcd raft's;
// this package only stores what raft hands it, moves its messages and
// applies what it commits.
//
// # What it owns
//
//   - Storage: raft's log, HardState and snapshots in one data directory on
//     an internal/vfs FS, and the identity of that directory (cluster id,
//     node id).
//   - Node: the single goroutine that runs the Ready loop, Propose/Tick/
//     Step/Status/Leader, and snapshot + compaction every N applied entries.
//   - Transport, the seam for raft messages, and MemNetwork, an in-process
//     transport whose links can be cut (tests, dev clusters).
//
// # What it must not touch
//
// It knows nothing of Kafka: entries are opaque bytes handed to a
// StateMachine (internal/metadata will be one); it opens no sockets
// (internal/peer implements Transport); it reads and writes files only
// through internal/vfs, never os.
//
// # Durability order
//
// For each Ready: (1) a snapshot, if any, is written to its own file
// atomically and the WAL rewritten to continue from it; (2) entries and
// then the HardState are appended to the WAL and fsynced; only then
// (3) the Ready's messages are sent; (4) committed entries are applied
// to the StateMachine (a snapshot is restored first); (5) Advance. So no
// peer ever hears a vote or an append acknowledgement that a power loss
// could take back.
//
// # On-disk format (directory Config.Dir)
//
//	identity.json                      {"cluster_id":N,"node_id":N}, atomic write
//	raft.wal                           records, appended and fsynced
//	snap-<term %016x>-<index %016x>    one record: a marshalled raftpb.Snapshot
//
// A record is [length u32 LE][CRC-32C u32 LE of type+payload][type u8]
// [payload], length = 1+len(payload). WAL record types: 1 raftpb.Entry,
// 2 raftpb.HardState, 3 raftpb.SnapshotMetadata of the snapshot file the
// WAL continues from (always first when present). Replay applies records in
// order (a later entry at an index replaces the earlier ones from there, as
// raft's log does); the first short or CRC-failing record ends the log and
// the file is truncated there (a torn tail; fsynced). An unknown type with
// a good CRC is refused. Compaction rewrites the WAL atomically (tmp,
// fsync, rename, fsync dir) as [snapshot ref][HardState][entries after the
// snapshot], then removes unreferenced snapshot files, so a crash leaves
// either the old WAL with its old snapshot or the new pair.
//
// # Identity and amnesia
//
// The directory records the cluster id and node id on first start; opening
// it with other ids fails (ErrIdentity). A node with an empty raft log
// starts only as a member of a new cluster (Config.Peers, Join false, no
// identity yet). An empty log with Join set, or with an identity already
// recorded (the log was lost), fails with ErrAmnesia: a voter that forgot
// its votes and entries could help elect a leader missing committed
// entries. Such a node must get its data back, or be removed from and
// re-added to the configuration.
//
// # Membership
//
// The configuration is etcd raft's: ProposeConfChange proposes a
// ConfChangeV2 (several voters at once go through raft's joint consensus)
// and returns once it is applied; Membership reports voters and learners.
// A node started with Config.Observer is outside the configuration until
// the leader adds it as a learner; it never campaigns, follows the log
// (from a snapshot when compacted) and may be promoted to a voter. After
// any configuration change on a compacted log a snapshot is taken at once,
// because raft ignores a snapshot whose ConfState does not name the
// receiving node. The configuration is saved in each snapshot's ConfState
// and rebuilt from the log's conf-change entries after it.
//
// # Snapshot size and transfer
//
// A snapshot is one raftpb.Snapshot holding the StateMachine's whole
// Snapshot() bytes; it is written as one file and held in memory.
// ReadFile bounds a file to 64 MiB and a WAL record to the same. The
// metadata image of 100,000 partitions is about 8.5 MiB (docs/cluster.md,
// "Snapshots in chunks"), so the bound is reached near 750,000.
//
// A Transport that implements SnapshotReporting tells the node whether
// each MsgSnap arrived; the node hands that to raft (SnapshotFinish or
// SnapshotFailure, after which raft sends a new snapshot). internal/peer
// does: it sends each MsgSnap on its own path in CRC-32C-checked chunks of
// 1 MiB and reports once the receiver has answered. With any other
// Transport (MemNetwork) the node reports every MsgSnap finished as soon
// as it is handed to Send; that is safe, because raft probes a follower
// that did not get it and sends a new snapshot when it must.
package quorum
