package peer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Snapshots travel on their own path, POST /raft/snapshot, one request per
// MsgSnap, sent by a goroutine of their own per peer so that heartbeats and
// appends to that peer (POST /raft) are never queued behind one. The body:
//
//	[u32 BE n][n bytes: the raftpb.Message with its snapshot's data left out]
//	[u64 BE size of the data][u32 BE CRC-32C (Castagnoli) of the whole data]
//	chunks, until size bytes have come: [u32 BE len][u32 BE CRC-32C][len bytes]
//
// Chunks are at most snapChunk bytes; the receiver checks each chunk's and
// then the whole data's checksum, bounds the data by maxSnapshotData, and
// steps the message, data put back, only when it is complete and checked.
// It answers 204 once the message is stepped; anything else (a torn body,
// a bad checksum, too large) is dropped with a log line and answered 400.
// The sender reports the answer to raft (SetSnapshotReporter): finished on
// 204, failed otherwise, so raft sends a new snapshot when it must.
const (
	snapChunk = 1 << 20
	// maxSnapshotData bounds a received snapshot's data: the quorum's
	// storage bounds a snapshot file (and a WAL record) to the same.
	maxSnapshotData = 64 << 20
	// maxSnapshotHeader bounds the message without its data.
	maxSnapshotHeader = 4 << 20
	// snapTimeout bounds one snapshot transfer.
	snapTimeout = 2 * time.Minute
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SetSnapshotReporter implements quorum.SnapshotReporting: report is called
// once per MsgSnap handed to Send, with the receiver's verdict.
func (c *Client) SetSnapshotReporter(report func(to uint64, ok bool)) {
	c.mu.Lock()
	c.snapReport = report
	c.mu.Unlock()
}

func (c *Client) report(to uint64, ok bool) {
	c.mu.Lock()
	fn := c.snapReport
	c.mu.Unlock()
	if fn != nil {
		fn(to, ok)
	}
}

// sendSnap queues a MsgSnap for its peer's snapshot goroutine (c.mu held).
// Raft sends one snapshot to a peer at a time and waits for its report, so
// a full queue means a stale message: it is reported failed.
func (c *Client) sendSnap(m *raftpb.Message) {
	to := m.GetTo()
	q, ok := c.snapQueues[to]
	if !ok {
		q = make(chan *raftpb.Message, 1)
		c.snapQueues[to] = q
		c.wg.Add(1)
		go c.snapLoop(to, q)
	}
	select {
	case q <- m:
	default:
		// The reporter must not be called with c.mu held.
		go c.report(to, false)
	}
}

func (c *Client) snapLoop(to uint64, q chan *raftpb.Message) {
	defer c.wg.Done()
	for {
		var m *raftpb.Message
		select {
		case <-c.stopc:
			// What is still queued is reported failed, so raft does not
			// wait on it.
			select {
			case m := <-q:
				c.report(m.GetTo(), false)
			default:
			}
			return
		case m = <-q:
		}
		addr, _ := c.Addr(to)
		size := len(m.GetSnapshot().GetData())
		start := time.Now()
		err := c.postSnapshot(addr, m)
		if err != nil {
			c.logger.Warn("quorum: snapshot not delivered", "to", to, "addr", addr,
				"index", m.GetSnapshot().GetMetadata().GetIndex(), "bytes", size, "err", err)
		} else {
			c.logger.Info("quorum: snapshot delivered", "to", to,
				"index", m.GetSnapshot().GetMetadata().GetIndex(), "bytes", size,
				"chunks", (size+snapChunk-1)/snapChunk, "took", time.Since(start).Round(time.Millisecond))
		}
		c.report(to, err == nil)
	}
}

// postSnapshot streams m to addr in chunks and waits for the answer.
func (c *Client) postSnapshot(addr string, m *raftpb.Message) error {
	ctx, cancel := context.WithTimeout(context.Background(), snapTimeout)
	defer cancel()
	go func() {
		select {
		case <-c.stopc:
			cancel()
		case <-ctx.Done():
		}
	}()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeSnapshot(pw, m)) }()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.scheme+"://"+addr+"/raft/snapshot", pr)
	if err != nil {
		pr.Close()
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.http.Do(req)
	pr.CloseWithError(errors.New("request done")) // ends the writer if the request ended early
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode == http.StatusNotFound {
		// A node of an earlier release (a rolling upgrade) has no
		// /raft/snapshot: it gets the snapshot whole on /raft, as before.
		return c.postWhole(ctx, addr, m)
	}
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("status %s: %s", resp.Status, string(msg))
	}
	return nil
}

// postWhole sends m as the one message of a /raft request.
func (c *Client) postWhole(ctx context.Context, addr string, m *raftpb.Message) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	body := make([]byte, 4, 4+len(b))
	binary.BigEndian.PutUint32(body, uint32(len(b)))
	body = append(body, b...)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.scheme+"://"+addr+"/raft", bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("status %s: %s", resp.Status, string(msg))
	}
	return nil
}

// writeSnapshot writes m in the /raft/snapshot format.
func writeSnapshot(w io.Writer, m *raftpb.Message) error {
	data := m.GetSnapshot().GetData()
	// The message without the data, sharing m's other fields (read only):
	// a clone would copy the data too.
	head := &raftpb.Message{}
	hr := head.ProtoReflect()
	m.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Name() != "snapshot" {
			hr.Set(fd, v)
		}
		return true
	})
	head.Snapshot = &raftpb.Snapshot{Metadata: m.GetSnapshot().GetMetadata()}
	hb, err := proto.Marshal(head)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var hdr [16]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(hb)))
	if _, err := bw.Write(hdr[:4]); err != nil {
		return err
	}
	if _, err := bw.Write(hb); err != nil {
		return err
	}
	binary.BigEndian.PutUint64(hdr[:8], uint64(len(data)))
	binary.BigEndian.PutUint32(hdr[8:12], crc32.Checksum(data, castagnoli))
	if _, err := bw.Write(hdr[:12]); err != nil {
		return err
	}
	for off := 0; off < len(data); off += snapChunk {
		chunk := data[off:min(off+snapChunk, len(data))]
		binary.BigEndian.PutUint32(hdr[:4], uint32(len(chunk)))
		binary.BigEndian.PutUint32(hdr[4:8], crc32.Checksum(chunk, castagnoli))
		if _, err := bw.Write(hdr[:8]); err != nil {
			return err
		}
		if _, err := bw.Write(chunk); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// readSnapshot reads a message in the /raft/snapshot format, its data
// reassembled and checked.
func readSnapshot(r io.Reader) (*raftpb.Message, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var hdr [12]byte
	if _, err := io.ReadFull(br, hdr[:4]); err != nil {
		return nil, fmt.Errorf("message length: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n > maxSnapshotHeader {
		return nil, fmt.Errorf("message of %d bytes exceeds %d", n, maxSnapshotHeader)
	}
	hb := make([]byte, n)
	if _, err := io.ReadFull(br, hb); err != nil {
		return nil, fmt.Errorf("message: %w", err)
	}
	m := &raftpb.Message{}
	if err := proto.Unmarshal(hb, m); err != nil {
		return nil, fmt.Errorf("message: %w", err)
	}
	if m.GetType() != raftpb.MsgSnap || m.Snapshot == nil {
		return nil, fmt.Errorf("not a snapshot message (%s)", m.GetType())
	}
	if _, err := io.ReadFull(br, hdr[:12]); err != nil {
		return nil, fmt.Errorf("data header: %w", err)
	}
	size := binary.BigEndian.Uint64(hdr[:8])
	sum := binary.BigEndian.Uint32(hdr[8:12])
	if size > maxSnapshotData {
		return nil, fmt.Errorf("snapshot of %d bytes exceeds %d", size, maxSnapshotData)
	}
	// Grown as chunks arrive, so a lying size costs no large allocation.
	data := make([]byte, 0, min(size, snapChunk))
	for uint64(len(data)) < size {
		if _, err := io.ReadFull(br, hdr[:8]); err != nil {
			return nil, fmt.Errorf("chunk header at %d of %d bytes: %w", len(data), size, err)
		}
		l := binary.BigEndian.Uint32(hdr[:4])
		csum := binary.BigEndian.Uint32(hdr[4:8])
		if l == 0 || l > snapChunk || uint64(len(data))+uint64(l) > size {
			return nil, fmt.Errorf("bad chunk length %d at %d of %d bytes", l, len(data), size)
		}
		at := len(data)
		data = append(data, make([]byte, l)...)
		if _, err := io.ReadFull(br, data[at:]); err != nil {
			return nil, fmt.Errorf("chunk at %d of %d bytes: %w", at, size, err)
		}
		if crc32.Checksum(data[at:], castagnoli) != csum {
			return nil, fmt.Errorf("chunk at %d of %d bytes: checksum mismatch", at, size)
		}
	}
	if crc32.Checksum(data, castagnoli) != sum {
		return nil, errors.New("snapshot data: checksum mismatch")
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, errors.New("trailing bytes after the snapshot")
	}
	m.Snapshot.Data = data
	return m, nil
}

func (s *Server) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	m, err := readSnapshot(http.MaxBytesReader(w, r.Body, maxSnapshotHeader+maxSnapshotData+64<<10))
	if err != nil {
		s.logger.Warn("quorum: snapshot transfer dropped", "from", r.RemoteAddr, "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := s.raft.Step(r.Context(), m); err != nil {
		s.logger.Warn("quorum: snapshot not taken", "from", m.GetFrom(), "err", err)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
