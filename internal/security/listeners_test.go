package security

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseListeners(t *testing.T) {
	cases := []struct {
		props map[string]string
		want  []Listener
	}{
		{map[string]string{}, []Listener{{Name: "PLAINTEXT", Protocol: Plaintext, Bind: "localhost:9092"}}},
		{map[string]string{"listeners": "PLAINTEXT://:9092,SASL_SSL://:9093"}, []Listener{
			{Name: "PLAINTEXT", Protocol: Plaintext, Bind: ":9092"},
			{Name: "SASL_SSL", Protocol: SASLSSL, Bind: ":9093"}}},
		{map[string]string{
			"listeners":                      "internal://127.0.0.1:9094,EXTERNAL://[::1]:9095",
			"listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL",
			"advertised.listeners":           "EXTERNAL://broker.example.com:19095"}, []Listener{
			{Name: "INTERNAL", Protocol: Plaintext, Bind: "127.0.0.1:9094"},
			{Name: "EXTERNAL", Protocol: SASLSSL, Bind: "[::1]:9095", Advertise: "broker.example.com:19095"}}},
		// Kafka's stock combined-mode file: the CONTROLLER listener is skipped.
		{map[string]string{
			"listeners":                      "PLAINTEXT://:9092,CONTROLLER://:9093",
			"controller.listener.names":      "CONTROLLER",
			"advertised.listeners":           "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
			"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"}, []Listener{
			{Name: "PLAINTEXT", Protocol: Plaintext, Bind: ":9092", Advertise: "localhost:9092"}}},
		{map[string]string{"listeners": "127.0.0.1:0"}, []Listener{{Name: "PLAINTEXT", Protocol: Plaintext, Bind: "127.0.0.1:0"}}},
		// KIP-797: an IPv4 and an IPv6 listener may share a port.
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092"}, []Listener{
			{Name: "PLAINTEXT", Protocol: Plaintext, Bind: "127.0.0.1:9092"},
			{Name: "SSL", Protocol: SSL, Bind: "[::1]:9092"}}},
	}
	for _, tc := range cases {
		got, err := ParseListeners(brokerConfig(t, tc.props))
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v:\n got %+v, %v\nwant %+v", tc.props, got, err, tc.want)
		}
	}
	bad := []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"listeners": "INTERNAL://:9094"}, "no security protocol"},
		{map[string]string{"listeners": "PLAINTEXT://:9092,plaintext://:9093"}, "more than once"},
		{map[string]string{"listeners": "PLAINTEXT://:9092,SSL://:9092"}, "both use port 9092"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092,SSL://10.0.0.1:9092"}, "both use port 9092"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092,SASL_SSL://[::2]:9092"}, "both use port 9092"},
		{map[string]string{"listeners": "PLAINTEXT://localhost:9092,SSL://[::1]:9092"}, "both use port 9092"},
		{map[string]string{"listeners": "PLAINTEXT://nohostport"}, "missing port"},
		{map[string]string{"listeners": "PLAINTEXT://:99999"}, "port"},
		{map[string]string{"advertised.listeners": "SSL://h:1"}, "not a listener"},
		{map[string]string{"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, "cannot connect"},
		{map[string]string{"listeners": "CONTROLLER://:9093", "controller.listener.names": "CONTROLLER"}, "only controller"},
	}
	for _, tc := range bad {
		_, err := ParseListeners(brokerConfig(t, tc.props))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.props, err, tc.want)
		}
	}
}
