package config

import (
	"strings"
	"testing"
)

func TestListenerPrefixedConfigs(t *testing.T) {
	b, err := NewBroker(map[string]string{
		"ssl.client.auth":                                       "requested",
		"listener.name.ssl.ssl.client.auth":                     "required",
		"listener.name.sasl_ssl.plain.sasl.jaas.config":         `x.Y required user_a="b";`,
		"listener.name.sasl_ssl.sasl.enabled.mechanisms":        "SCRAM-SHA-512",
		"listener.name.sasl_ssl.connections.max.reauth.ms":      "0",
		"listener.name.internal.ssl.keystore.type":              "pkcs12",
		"listener.name.internal.scram-sha-256.sasl.jaas.config": "x.Y required;",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ listener, name, want string }{
		{"SSL", "ssl.client.auth", "required"},
		{"ssl", "ssl.client.auth", "required"},
		{"SASL_SSL", "ssl.client.auth", "requested"},
		{"SASL_SSL", "sasl.enabled.mechanisms", "SCRAM-SHA-512"},
		{"PLAINTEXT", "sasl.enabled.mechanisms", "GSSAPI"},
		{"SASL_SSL", "plain.sasl.jaas.config", `x.Y required user_a="b";`},
	} {
		if v, ok := b.ListenerValue(tc.listener, tc.name); !ok || v != tc.want {
			t.Errorf("%s %s = %q %v, want %q", tc.listener, tc.name, v, ok, tc.want)
		}
	}
	if _, ok := b.ListenerValue("PLAINTEXT", "plain.sasl.jaas.config"); ok {
		t.Error("a JAAS config without a listener prefix was found")
	}
	if !b.ListenerSet("SASL_SSL", "sasl.enabled.mechanisms") || b.ListenerSet("PLAINTEXT", "sasl.enabled.mechanisms") {
		t.Error("ListenerSet")
	}
	d, ok := LookupBroker("listener.name.ssl.ssl.keystore.password")
	if !ok || !d.Sensitive || d.Name != "listener.name.ssl.ssl.keystore.password" {
		t.Errorf("lookup prefixed: %+v %v", d, ok)
	}
	for name, v := range map[string]string{
		"listener.name.ssl.ssl.client.auth":         "sometimes",
		"listener.name.ssl.num.partitions":          "3",
		"listener.name.ssl.no.such":                 "x",
		"listener.name..ssl.client.auth":            "none",
		"listener.security.protocol.map":            "PLAINTEXT:TLS",
		"listener.name.sasl_ssl.sasl.jaas.config.x": "y",
	} {
		if _, err := NewBroker(map[string]string{name: v}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v", name, v, err)
		}
	}
}

func TestParseProtocolMap(t *testing.T) {
	m, err := ParseProtocolMap("internal:plaintext, EXTERNAL:SASL_SSL")
	if err != nil || m["INTERNAL"] != "PLAINTEXT" || m["EXTERNAL"] != "SASL_SSL" {
		t.Fatalf("%v %v", m, err)
	}
	for _, bad := range []string{"", "A", "A:B", "A:SSL,a:SSL", ":SSL"} {
		if _, err := ParseProtocolMap(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
