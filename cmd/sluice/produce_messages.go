package main

// The broker's error message for a failed produce. franz-go's producer
// reports a partition's error code only, not the ErrorMessage of the Produce
// response ("INVALID_RECORD: This record has failed the validation on the
// broker" rather than why). sluice produce therefore dials through a
// connection that watches the Kafka frames going by: it notes the
// correlation ids of Produce requests and decodes their responses, keeping
// the last error message per partition. It only reads: every byte is passed
// through unchanged, and anything it cannot parse turns the watching off for
// that connection.

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceMessages holds the last error message the brokers sent per
// partition in Produce responses. sluice produce writes one topic, so the
// partition is the key (Produce v13 names topics by id only).
type produceMessages struct {
	mu   sync.Mutex
	msgs map[int32]codeMessage
}

type codeMessage struct {
	code int16
	msg  string
}

func newProduceMessages() *produceMessages {
	return &produceMessages{msgs: map[int32]codeMessage{}}
}

// message returns the last error message for the partition if it came
// with err's error code ("" otherwise: a message of an earlier, retried
// error does not describe another one).
func (m *produceMessages) message(partition int32, err error) string {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cm, ok := m.msgs[partition]; ok && cm.code == ke.Code {
		return cm.msg
	}
	return ""
}

// dialer dials as franz-go would (TLS with tc when it is not nil, the server
// name from the address) and watches the connection.
func (m *produceMessages) dialer(tc *tls.Config) func(ctx context.Context, network, host string) (net.Conn, error) {
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		d := &net.Dialer{Timeout: 10 * time.Second}
		var conn net.Conn
		var err error
		if tc != nil {
			c := tc.Clone()
			if c.ServerName == "" {
				if h, _, err := net.SplitHostPort(host); err == nil {
					c.ServerName = h
				}
			}
			conn, err = (&tls.Dialer{NetDialer: d, Config: c}).DialContext(ctx, network, host)
		} else {
			conn, err = d.DialContext(ctx, network, host)
		}
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: conn, m: m, produce: map[int32]int16{}}, nil
	}
}

// watchedConn parses the request frames written and the response frames
// read.
type watchedConn struct {
	net.Conn
	m       *produceMessages
	mu      sync.Mutex
	off     bool
	out, in []byte          // partial frames
	produce map[int32]int16 // correlation id -> Produce request version
}

func (c *watchedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if !c.off {
		c.out = append(c.out, p...)
		for len(c.out) >= 4 {
			size := int(int32(binary.BigEndian.Uint32(c.out)))
			if size < 8 || size > 1<<30 {
				c.stop()
				break
			}
			if len(c.out) < 4+size {
				break
			}
			key := int16(binary.BigEndian.Uint16(c.out[4:]))
			version := int16(binary.BigEndian.Uint16(c.out[6:]))
			corr := int32(binary.BigEndian.Uint32(c.out[8:]))
			if key == 0 {
				c.produce[corr] = version
			}
			c.out = c.out[4+size:]
		}
		if len(c.out) == 0 {
			c.out = nil // do not keep the records' bytes alive
		}
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if !c.off {
			c.in = append(c.in, p[:n]...)
			for len(c.in) >= 4 {
				size := int(int32(binary.BigEndian.Uint32(c.in)))
				if size < 4 || size > 1<<30 {
					c.stop()
					break
				}
				if len(c.in) < 4+size {
					break
				}
				frame := c.in[4 : 4+size]
				corr := int32(binary.BigEndian.Uint32(frame))
				if version, ok := c.produce[corr]; ok {
					delete(c.produce, corr)
					c.record(version, frame[4:])
				}
				c.in = c.in[4+size:]
			}
			if len(c.in) == 0 {
				c.in = nil
			}
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *watchedConn) stop() {
	c.off, c.out, c.in, c.produce = true, nil, nil, nil
}

// record decodes a Produce response body (after the correlation id) and
// keeps its partitions' error messages.
func (c *watchedConn) record(version int16, b []byte) {
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = version
	if resp.IsFlexible() { // response header v1: tagged fields
		r := kbin.Reader{Src: b}
		for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
			r.Uvarint()
			r.Span(int(r.Uvarint()))
		}
		if !r.Ok() {
			return
		}
		b = r.Src
	}
	if err := resp.ReadFrom(b); err != nil {
		return
	}
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 && p.ErrorMessage != nil && *p.ErrorMessage != "" {
				c.m.msgs[p.Partition] = codeMessage{p.ErrorCode, *p.ErrorMessage}
			}
		}
	}
}

// checkProduceTopic asks the brokers for the topic as Kafka's producer does
// (allow.auto.create.topics=true: the broker's auto.create.topics.enable
// decides), so that a topic that does not exist, and will not be created,
// is reported at once with its reason rather than after --timeout.
// A broker whose metadata lags (a cluster, just after the topic was
// created elsewhere) may not know the topic yet: it is asked again for up
// to 2 seconds before the topic is called missing.
func checkProduceTopic(c *cmd, cl *kgo.Client, topic string) error {
	ctx, cancel := c.deadline()
	defer cancel()
	giveUp := time.Now().Add(2 * time.Second)
	for {
		err := askProduceTopic(ctx, cl, topic)
		if err == nil || !errors.Is(err, kerr.UnknownTopicOrPartition) || time.Now().After(giveUp) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func askProduceTopic(ctx context.Context, cl *kgo.Client, topic string) error {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		err := kerr.ErrorForCode(t.ErrorCode)
		switch {
		case err == nil, errors.Is(err, kerr.LeaderNotAvailable): // LEADER_NOT_AVAILABLE: being created
			return nil
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			return fmt.Errorf("%w (topic %s does not exist and the broker does not create topics on first use: auto.create.topics.enable=false; create it with sluice topic create)", err, topic)
		case errors.Is(err, kerr.UnknownTopicID), t.Topic != nil && *t.Topic != topic:
			continue
		default:
			return fmt.Errorf("topic %s: %w", topic, err)
		}
	}
	return nil
}
