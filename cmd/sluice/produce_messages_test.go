package main

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scriptedConn returns canned bytes one at a time and swallows writes.
type scriptedConn struct {
	net.Conn
	in *bytes.Reader
}

func (c *scriptedConn) Read(p []byte) (int, error)  { return c.in.Read(p[:1]) }
func (c *scriptedConn) Write(p []byte) (int, error) { return len(p), nil }

// TestProduceMessagesParsesFrames: the watching connection finds a Produce
// response's partition error messages whatever the read and write sizes,
// for flexible and non-flexible versions, and ignores other APIs' frames.
func TestProduceMessagesParsesFrames(t *testing.T) {
	for _, version := range []int16{8, 9, 13} { // ErrorMessage is v8+
		var in []byte
		frame := func(b []byte) []byte { return binary.BigEndian.AppendUint32(nil, uint32(len(b))) }
		// A Metadata response (correlation 1) that must be skipped, then the
		// Produce response (correlation 2).
		other := binary.BigEndian.AppendUint32(nil, 1)
		other = append(other, bytes.Repeat([]byte{0xff}, 40)...)
		in = append(append(in, frame(other)...), other...)
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = version
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = "t"
		for p, code := range []int16{0, kerr.InvalidRecord.Code} {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.ErrorCode = int32(p), code
			if code != 0 {
				msg := "compacted topic cannot accept records without a key"
				rp.ErrorMessage = &msg
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		body := binary.BigEndian.AppendUint32(nil, 2)
		if resp.IsFlexible() {
			body = append(body, 0) // no header tags
		}
		body = resp.AppendTo(body)
		in = append(append(in, frame(body)...), body...)

		m := newProduceMessages()
		c := &watchedConn{Conn: &scriptedConn{in: bytes.NewReader(in)}, m: m, produce: map[int32]int16{}}
		// Requests: Metadata (key 3) with correlation 1, Produce with 2,
		// written in pieces.
		var out []byte
		for corr, key := range map[int32]int16{1: 3, 2: 0} {
			req := binary.BigEndian.AppendUint16(nil, uint16(key))
			req = binary.BigEndian.AppendUint16(req, uint16(version))
			req = binary.BigEndian.AppendUint32(req, uint32(corr))
			req = append(req, 0, 0, 1, 2, 3)
			out = append(append(out, frame(req)...), req...)
		}
		for i := 0; i < len(out); i += 3 {
			c.Write(out[i:min(i+3, len(out))])
		}
		buf := make([]byte, 64)
		for {
			if _, err := c.Read(buf); err != nil {
				break
			}
		}
		if c.off {
			t.Fatalf("v%d: parsing turned off", version)
		}
		if got := m.message(1, kerr.InvalidRecord); got != "compacted topic cannot accept records without a key" {
			t.Errorf("v%d: message %q", version, got)
		}
		if got := m.message(1, kerr.NotLeaderForPartition); got != "" {
			t.Errorf("v%d: message of another code: %q", version, got)
		}
		if got := m.message(0, kerr.InvalidRecord); got != "" {
			t.Errorf("v%d: message for a partition without error: %q", version, got)
		}
	}
}
