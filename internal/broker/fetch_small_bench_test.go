package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkFetchSmall is the fetch path for many small fetches (issue #14's
// "Also"): each request asks one partition (or all 64) for its next batch of
// ten 100 B records (partition max bytes 2000: one batch each fits, not two),
// over 1, 16 or 64 connections that each wait for their answer before
// sending again. One
// op is one Fetch request and response; allocs/op are the broker's (the
// requests are encoded once and the responses read into one buffer per
// connection). Run it with -mutexprofile or -blockprofile for the locks:
//
//	go test -run XXX -bench FetchSmall -benchmem -mutexprofile m.out ./internal/broker
func BenchmarkFetchSmall(b *testing.B) {
	const (
		partitions = 64
		batches    = 20 // per partition, of ten records each
	)
	tb := startTestBroker(b, testOptions{Quiet: true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if resp, err := tb.admin().CreateTopic(ctx, partitions, 1, nil, "small"); err != nil || resp.Err != nil {
		b.Fatalf("create topic: %v %v", err, resp.Err)
	}
	// Manual flushing puts each partition's ten records of a round in one batch.
	cl := tb.client(kgo.ManualFlushing(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	val := bytes.Repeat([]byte("v"), 100)
	var failed atomic.Pointer[error]
	for range batches {
		for p := range partitions {
			for range 10 {
				cl.Produce(ctx, &kgo.Record{Topic: "small", Partition: int32(p), Value: val}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.Store(&err)
					}
				})
			}
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}

	for _, tc := range []struct{ conns, parts int }{{1, 1}, {16, 1}, {64, 1}, {16, partitions}} {
		name := fmt.Sprintf("conns=%d", tc.conns)
		if tc.parts > 1 {
			name = fmt.Sprintf("conns=%d/partitions=%d", tc.conns, tc.parts)
		}
		conns := tc.conns
		b.Run(name, func(b *testing.B) {
			fcs := make([]*smallFetchConn, conns)
			for i := range fcs {
				fcs[i] = newSmallFetchConn(b, tb, int32(i%partitions), tc.parts, batches*10)
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, conns)
			b.ReportAllocs()
			b.ResetTimer()
			for _, fc := range fcs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						if err := fc.roundTrip(); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
		})
	}
}

// smallFetchConn is one connection fetching n partitions from offsets 0,
// 10, 20, ... in turn, with its requests encoded up front.
type smallFetchConn struct {
	rc   *rawConn
	reqs [][]byte
	i    int
	buf  []byte
}

func newSmallFetchConn(b *testing.B, tb *testBroker, partition int32, n, records int) *smallFetchConn {
	fc := &smallFetchConn{rc: tb.raw(), buf: make([]byte, 1<<20)}
	fc.rc.nc.SetDeadline(time.Time{})
	for off := 0; off < records; off += 10 {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
		t := kmsg.NewFetchRequestTopic()
		t.Topic = "small"
		for j := range n {
			p := kmsg.NewFetchRequestTopicPartition()
			p.Partition, p.FetchOffset, p.PartitionMaxBytes = (partition+int32(j))%64, int64(off), 2000
			p.CurrentLeaderEpoch, p.LogStartOffset = -1, -1
			t.Partitions = append(t.Partitions, p)
		}
		req.Topics = append(req.Topics, t)
		fc.reqs = append(fc.reqs, encodeRequest(req, int32(off), "bench"))
	}
	// The first answer is decoded: it must hold the ten records asked for
	// from each partition.
	fc.rc.write(fc.reqs[0])
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	fc.rc.recv(resp)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != n {
		b.Fatalf("fetch of %d partitions answered %d topics", n, len(resp.Topics))
	}
	for _, rp := range resp.Topics[0].Partitions {
		if rp.ErrorCode != 0 || len(rp.RecordBatches) < 10*100 {
			b.Fatalf("fetch of partition %d: error %d, %d bytes", rp.Partition, rp.ErrorCode, len(rp.RecordBatches))
		}
	}
	return fc
}

// roundTrip sends the next request and reads its answer, checking its
// correlation id.
func (fc *smallFetchConn) roundTrip() error {
	req := fc.reqs[fc.i%len(fc.reqs)]
	fc.i++
	if _, err := fc.rc.nc.Write(req); err != nil {
		return err
	}
	if _, err := io.ReadFull(fc.rc.br, fc.buf[:8]); err != nil {
		return err
	}
	n := int(binary.BigEndian.Uint32(fc.buf))
	if n < 4 || n > len(fc.buf) {
		return fmt.Errorf("response of %d bytes", n)
	}
	if corr := binary.BigEndian.Uint32(fc.buf[4:]); corr != binary.BigEndian.Uint32(req[8:]) {
		return fmt.Errorf("correlation id %d, sent %d", corr, binary.BigEndian.Uint32(req[8:]))
	}
	_, err := io.ReadFull(fc.rc.br, fc.buf[8:4+n])
	return err
}
