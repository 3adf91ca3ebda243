package wire

import (
	"context"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// splitResponse is a Metadata response that sends the middle of its
// encoding from a file section.
type splitResponse struct {
	*kmsg.MetadataResponse
	f    *os.File // holds the whole body
	body []byte
}

func (r *splitResponse) AppendParts(p *Parts) {
	third := len(r.body) / 3
	p.Buf = append(p.Buf, r.body[:third]...)
	p.AppendFile(r.f, int64(third), int64(third))
	p.Buf = append(p.Buf, r.body[2*third:]...)
}

// partsDispatcher answers Metadata; odd requests with a splitResponse.
type partsDispatcher struct {
	t   *testing.T
	dir string
}

func (d *partsDispatcher) Versions(key int16) (int16, int16, bool) {
	if key == 3 {
		return 0, 12, true
	}
	return 0, 0, false
}

func (d *partsDispatcher) Concurrent(int16) bool { return true }

func (d *partsDispatcher) Handle(_ context.Context, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.SetVersion(req.Version)
	n := r.Header.CorrelationID
	resp.ControllerID = n
	for i := range int(n % 7) {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = int32(i), "broker.example", 9092
		resp.Brokers = append(resp.Brokers, b)
	}
	if n%2 == 1 {
		body := resp.AppendTo(nil)
		f, err := os.CreateTemp(d.dir, "body")
		if err != nil {
			return nil, err
		}
		d.t.Cleanup(func() { f.Close() })
		if _, err := f.Write(body); err != nil {
			return nil, err
		}
		return &splitResponse{MetadataResponse: resp, f: f, body: body}, nil
	}
	return resp, nil
}

// Pipelined responses, some with file sections, arrive whole and in
// request order.
func TestPartsResponsesThroughServer(t *testing.T) {
	_, addr, _ := startServer(t, &partsDispatcher{t: t, dir: t.TempDir()}, Config{})
	c := dial(t, addr)
	const n = 40
	for i := range n {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = int16(1 + i%12)
		c.send(req, int32(i))
	}
	for i := range n {
		version := int16(1 + i%12)
		corr, body, err := c.recv(ResponseHeaderVersion(3, version))
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if corr != int32(i) {
			t.Fatalf("response %d has correlation id %d", i, corr)
		}
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = version
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if resp.ControllerID != int32(i) || len(resp.Brokers) != i%7 {
			t.Fatalf("response %d: controller %d, %d brokers", i, resp.ControllerID, len(resp.Brokers))
		}
	}
}
