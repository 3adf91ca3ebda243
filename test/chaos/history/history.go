// Package history records what the fault checker's clients and nemesis did,
// as JSON lines, one operation per line, in the shape Jepsen uses: every
// operation is an "invoke" followed, on the same process, by exactly one
// completion ("ok", "fail" or "info").
//
//   - ok: it happened, and the completion carries what it observed (offsets of
//     acknowledged sends, records read).
//   - fail: it certainly did not happen (a transaction whose abort was
//     acknowledged, a read that returned an error).
//   - info: the outcome is unknown (a produce that errored may still have been
//     written: "maybe written"). A process never issues another operation
//     after an info on the same client; it takes a new process number.
//
// A process runs one operation at a time. The nemesis (fault injector) is
// process -1; its operations complete with "info" because a fault has no
// success or failure to speak of.
package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Operation types.
const (
	Invoke = "invoke"
	OK     = "ok"
	Fail   = "fail"
	Info   = "info"
)

// Functions (the f field) of client operations.
const (
	FSend      = "send"       // non-transactional produce of one or more values
	FTxn       = "txn"        // a transaction of sends; ok = committed, fail = aborted
	FPoll      = "poll"       // one consumer poll
	FOffsets   = "watermarks" // ListOffsets: high watermark and last stable offset per key
	FFinalPoll = "final-poll" // the final read, after every fault has healed

	// The metadata workload (a cluster's metadata quorum).
	FCreateTopic = "create-topic" // CreateTopics of one new topic: a "create" mop
	FAlterConfig = "alter-config" // IncrementalAlterConfigs of one topic: an "alter" mop (value: retention.ms)
	// FCreateAcl: CreateAcls of one new binding, FDeleteAcl: DeleteAcls of
	// one acknowledged binding (an "acl" mop each; a deletion's value: how
	// many bindings it matched).
	FCreateAcl     = "create-acl"
	FDeleteAcl     = "delete-acl"
	FController    = "controller"     // Metadata asked of one node (Node): the controller it names
	FFinalMetadata = "final-metadata" // one node's view after healing: "topic" and "config" mops

	// The consumer-group workload: a member's poll ("poll" mops), a commit
	// of offsets ("commit" mops: key, offset), and OffsetFetch observations
	// of the group's committed offsets during the run and after healing.
	FGroupPoll      = "group-poll"
	FCommit         = "commit"
	FCommitted      = "committed"
	FFinalCommitted = "final-committed"

	// The compaction workload: keyed writes and tombstones to a compacted
	// topic ("kv" mops), and the final read of it ("kv" mops: the latest
	// record of each record key, a tombstone without a value).
	FKVSend  = "kv-send"
	FKVFinal = "final-kv"

	// Replication: the batches each node's data directory holds for each
	// partition, read after the cluster stopped: "replica" mops.
	FReplicaLog = "replica-log"
)

// Mop functions of the metadata workload.
const (
	MCreate = "create" // key: topic created
	MAlter  = "alter"  // key: topic; value: retention.ms set
	MTopic  = "topic"  // key: topic a final view holds; value: its partition count
	MConfig = "config" // key: topic; value: retention.ms a final view holds
	// MAcl: key: the resource name of a metadata-workload ACL binding (one
	// binding per name); in a final view, value: how many bindings the node
	// holds for it.
	MAcl = "acl"
	// MKV: key: partition; item: the record key; value: the value
	// written or read (absent: a tombstone); offset.
	MKV = "kv"
	// MReplicaKV: key: partition of the compacted topic; item: a record
	// key; offset and value (absent: a tombstone) of its latest record in
	// one node's copy, below the final read's high watermark. A mop
	// without an item only says the node holds a copy.
	MReplicaKV = "replica-kv"
	// MCommit: key: partition; offset: a committed offset of the group.
	MCommit = "commit"
	// MReplica: key: partition; batches: what one node's copy holds.
	MReplica = "replica"
)

// Nemesis functions: a fault and the operation that heals it.
const (
	FKill   = "kill"   // SIGKILL a node
	FStart  = "start"  // (re)start a killed node and wait until it serves requests
	FPause  = "pause"  // SIGSTOP a node
	FResume = "resume" // SIGCONT a paused node and wait until it serves requests
	// FTerminate: SIGTERM a node (a clean, controlled shutdown); healed by
	// FStart.
	FTerminate = "terminate"
	// FPartition: cut pairs of nodes off from each other (network
	// namespaces); FNetem: a slow, lossy link (tc netem); FLossy: a
	// node's packets dropped at random (nftables); FSlow: a node's link
	// rate-limited (tc tbf); all healed by FHeal.
	FPartition = "partition"
	FNetem     = "netem"
	FLossy     = "lossy"
	FSlow      = "slow"
	FHeal      = "heal"
	// FStopWorkloads marks (on the nemesis process) when the workloads were
	// told to stop: availability is measured up to it.
	FStopWorkloads = "stop-workloads"
)

// IsFault tells whether a nemesis function injects a fault (as opposed to
// healing one, or marking the end of the workloads).
func IsFault(f string) bool {
	return f != FStart && f != FResume && f != "heal" && f != FStopWorkloads
}

// RoleController marks a fault whose node was the active controller when the
// fault was injected (Metadata's controller id just before).
const RoleController = "controller"

// Isolation levels of reads.
const (
	ReadUncommitted = "read_uncommitted"
	ReadCommitted   = "read_committed"
)

// NemesisProcess is the process number of the fault injector.
const NemesisProcess = -1

// Mop is one micro-operation: a send of one value to a key, or the records a
// poll got from a key. A key names one partition: "topic/partition".
type Mop struct {
	F   string `json:"f"`   // "send" or "poll"
	Key string `json:"key"` // topic/partition
	// Send: the value written (unique across the whole run) and, once the
	// broker acknowledged it, its offset. Offset is absent when unknown.
	Value  *int64 `json:"value,omitempty"`
	Offset *int64 `json:"offset,omitempty"`
	// KV: the record key of a keyed write or read.
	Item string `json:"item,omitempty"`
	// Poll: records read, in the order the client returned them, as
	// [offset, value] pairs.
	Records [][2]int64 `json:"records,omitempty"`
	// Replica: the record batches of one node's copy of the key, in log
	// order, as [base offset, last offset, partition leader epoch, CRC].
	Batches [][4]int64 `json:"batches,omitempty"`
	// Replica: the entries of that copy's aborted-transaction index
	// (.txnindex), in order, as [producer id, first offset, last offset].
	Aborted [][3]int64 `json:"aborted,omitempty"`
}

// Watermark is what a read learned about a key's high watermark (hwm) and
// last stable offset (lso); -1 means not learned.
type Watermark struct {
	HWM int64 `json:"hwm"`
	LSO int64 `json:"lso"`
}

// Op is one line of the history.
type Op struct {
	Index   int    `json:"index"`
	Time    int64  `json:"time"` // nanoseconds since the run started (monotonic)
	Process int    `json:"process"`
	Type    string `json:"type"`
	F       string `json:"f"`
	Client  string `json:"client,omitempty"` // franz-go, librdkafka, ...
	Value   []Mop  `json:"value,omitempty"`
	// Reads: isolation level; watermarks seen per key.
	Isolation  string               `json:"isolation,omitempty"`
	Watermarks map[string]Watermark `json:"watermarks,omitempty"`
	// Transactions: when EndTxn(commit) was invoked (absent if never).
	CommitTime *int64 `json:"commit_time,omitempty"`
	// Final reads: the offset each key was read up to (exclusive), and
	// whether the read reached it.
	Targets    map[string]int64 `json:"targets,omitempty"`
	Incomplete bool             `json:"incomplete,omitempty"`
	// Nemesis: which node, and free text. Role is "controller" when the
	// node was the active controller as the fault began; Target says how
	// the schedule chose the node ("controller" or "node").
	Node   *int   `json:"node,omitempty"`
	Role   string `json:"role,omitempty"`
	Target string `json:"target,omitempty"`
	Error  string `json:"error,omitempty"`
	// Network faults: the kind of partition (isolate, halves, bridge,
	// ring) or link fault (netem), and the node pairs cut from each other.
	Kind string   `json:"kind,omitempty"`
	Cut  [][2]int `json:"cut,omitempty"`
	// Metadata answers: the controller id a node named (-1: none), and the
	// cluster id it reported (final views).
	Controller *int32 `json:"controller,omitempty"`
	ClusterID  string `json:"cluster_id,omitempty"`
	// Leaders is the leader a node's Metadata answer named for each
	// workload partition (-1: none), recorded with the controller.
	Leaders map[string]int32 `json:"leaders,omitempty"`
}

// I64 returns a pointer to v (for optional fields).
func I64(v int64) *int64 { return &v }

// Recorder appends operations to a history, assigns their index and time, and
// writes each as a JSON line as soon as it is recorded.
type Recorder struct {
	mu    sync.Mutex
	start time.Time
	ops   []Op
	w     *bufio.Writer
	f     io.Closer
	err   error
}

// NewRecorder writes the history to path (created or truncated).
func NewRecorder(path string) (*Recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &Recorder{start: time.Now(), w: bufio.NewWriter(f), f: f}, nil
}

// Now is the time since the run started, as recorded in ops.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Start is the wall-clock start of the run.
func (r *Recorder) Start() time.Time { return r.start }

// Record appends op (its Index and Time are set here) and returns it.
func (r *Recorder) Record(op Op) Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.Index = len(r.ops)
	op.Time = int64(time.Since(r.start))
	r.ops = append(r.ops, op)
	if r.err == nil {
		b, err := json.Marshal(op)
		if err == nil {
			_, err = r.w.Write(append(b, '\n'))
		}
		r.err = err
	}
	return op
}

// Ops returns a copy of the operations recorded so far.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// Close flushes and closes the file.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.w.Flush()
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	if r.err != nil {
		return r.err
	}
	return err
}

// Read parses a history written by a Recorder.
func Read(rd io.Reader) ([]Op, error) {
	var ops []Op
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var op Op
		if err := json.Unmarshal(sc.Bytes(), &op); err != nil {
			return nil, fmt.Errorf("history line %d: %w", line, err)
		}
		ops = append(ops, op)
	}
	return ops, sc.Err()
}

// ReadFile parses the history file at path.
func ReadFile(path string) ([]Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f)
}
