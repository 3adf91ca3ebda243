package wire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrMalformedHeader is wrapped by every request-header parse error.
var ErrMalformedHeader = errors.New("wire: malformed request header")

// RequestHeader is a parsed Kafka request header (v0, v1 or v2).
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	// ClientID is nil when the client sent a null client id (and always for
	// header v0, which has none).
	ClientID *string
	// Version is the header version that was parsed: 0, 1 or 2.
	Version int8
}

// ClientIDString returns the client id or "" when null.
func (h *RequestHeader) ClientIDString() string {
	if h.ClientID == nil {
		return ""
	}
	return *h.ClientID
}

// RequestHeaderVersion returns the request header version Kafka uses for key
// at version: 2 for flexible versions, 0 for ControlledShutdown v0, else 1.
// Unknown keys get 1 (their correlation id can still be read for logging).
func RequestHeaderVersion(key, version int16) int8 {
	if key == 7 && version == 0 { // ControlledShutdown v0
		return 0
	}
	if key < 0 || int(key) >= len(flexibleFrom) {
		return 1
	}
	if f := flexibleFrom[key]; f >= 0 && version >= f {
		return 2
	}
	return 1
}

// flexibleFrom holds, for each api key kmsg knows, the first version kmsg
// encodes as flexible (-1 for none, and for keys it does not know). Asking
// kmsg itself costs a request allocation, on every request and response.
var flexibleFrom = func() (t [kmsg.MaxKey + 1]int16) {
	for key := range t {
		t[key] = -1
		req := kmsg.RequestForKey(int16(key))
		if req == nil {
			continue
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req.SetVersion(v)
			if req.IsFlexible() {
				t[key] = v
				break
			}
		}
	}
	return t
}()

// PeekKeyVersion returns the api key and version at the start of a frame.
func PeekKeyVersion(frame []byte) (key, version int16, err error) {
	if len(frame) < 4 {
		return 0, 0, fmt.Errorf("%w: %d bytes", ErrMalformedHeader, len(frame))
	}
	return int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:])), nil
}

// ParseRequestHeader parses a request header of the given version from the
// start of frame and returns it with the remaining body bytes (a sub-slice of
// frame).
func ParseRequestHeader(frame []byte, headerVersion int8) (RequestHeader, []byte, error) {
	var h RequestHeader
	h.Version = headerVersion
	if len(frame) < 8 {
		return h, nil, fmt.Errorf("%w: %d bytes", ErrMalformedHeader, len(frame))
	}
	h.APIKey = int16(binary.BigEndian.Uint16(frame))
	h.APIVersion = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	b := frame[8:]
	if headerVersion == 0 {
		return h, b, nil
	}
	if len(b) < 2 {
		return h, nil, fmt.Errorf("%w: truncated client id", ErrMalformedHeader)
	}
	n := int16(binary.BigEndian.Uint16(b))
	b = b[2:]
	switch {
	case n == -1:
	case n < -1:
		return h, nil, fmt.Errorf("%w: client id length %d", ErrMalformedHeader, n)
	default:
		if len(b) < int(n) {
			return h, nil, fmt.Errorf("%w: truncated client id", ErrMalformedHeader)
		}
		s := string(b[:n])
		h.ClientID = &s
		b = b[n:]
	}
	if headerVersion < 2 {
		return h, b, nil
	}
	rest, err := skipTaggedFields(b)
	if err != nil {
		return h, nil, fmt.Errorf("%w: %v", ErrMalformedHeader, err)
	}
	return h, rest, nil
}

// skipTaggedFields skips a tagged-field section (KIP-482): an unsigned varint
// count, then per field an unsigned varint tag, an unsigned varint size and
// that many bytes. Request headers define no tags Sluice uses.
func skipTaggedFields(b []byte) ([]byte, error) {
	num, n := binary.Uvarint(b)
	if n <= 0 || num > uint64(len(b)) {
		return nil, errors.New("bad tagged field count")
	}
	b = b[n:]
	for i := uint64(0); i < num; i++ {
		_, n = binary.Uvarint(b)
		if n <= 0 || n > 5 {
			return nil, errors.New("bad tag")
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || n > 5 || size > uint64(len(b)-n) {
			return nil, errors.New("bad tagged field size")
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// ResponseHeaderVersion returns the response header version for a response
// to key at version: 1 (with tagged fields) for flexible versions except
// ApiVersions, which always uses 0 so that a client can read it before it
// knows what the broker supports.
func ResponseHeaderVersion(key, version int16) int8 {
	if key == 18 { // ApiVersions
		return 0
	}
	if RequestHeaderVersion(key, version) == 2 {
		return 1
	}
	return 0
}

// ParseResponseHeader splits a response frame (without its size) to key at
// version into its correlation id and body, skipping the tagged fields of a
// version 1 header; for a client of another broker (a replica fetcher).
func ParseResponseHeader(key, version int16, frame []byte) (int32, []byte, error) {
	if len(frame) < 4 {
		return 0, nil, errors.New("wire: truncated response header")
	}
	corr, b := int32(binary.BigEndian.Uint32(frame)), frame[4:]
	if ResponseHeaderVersion(key, version) == 1 {
		var err error
		if b, err = skipTaggedFields(b); err != nil {
			return corr, nil, fmt.Errorf("wire: response header: %v", err)
		}
	}
	return corr, b, nil
}

// AppendResponse appends a complete response frame — 4-byte size, response
// header, body — to dst. resp's version must already be set.
func AppendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if ResponseHeaderVersion(resp.Key(), resp.GetVersion()) == 1 {
		dst = append(dst, 0) // no tagged fields
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
