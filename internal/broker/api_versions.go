// ApiVersions (key 18), v0–v4: the API keys and version ranges this broker
// serves, derived from apiTable (registry.go) — only keys with a registered
// handler are listed.
//
// Features (v3+, tagged fields): share.version, supported 0–1 and finalized
// at 1, as Apache Kafka reports it when share groups are enabled.
//
// Differences from Kafka: share.version is the only feature reported
// (metadata.version, kraft.version, group.version, transaction.version and
// streams.version are not), so clients use their defaults for the others.
// An unsupported ApiVersions version never reaches this handler: the wire
// layer answers it with a v0 UNSUPPORTED_VERSION response (KIP-511).

package broker

import (
	"context"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/wire"
)

func init() { register(kmsg.ApiVersions, (*Broker).handleApiVersions) }

// softwareRe is Kafka's rule for client_software_name/version (v3+).
var softwareRe = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (b *Broker) handleApiVersions(_ context.Context, _ *wire.Request, req *kmsg.ApiVersionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 3 && (!softwareRe.MatchString(req.ClientSoftwareName) || !softwareRe.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	resp.ApiKeys = apiVersionKeys()
	if req.Version >= 3 {
		reportFeatures(resp)
	}
	return resp, nil
}

// finalizedFeaturesEpoch is the epoch of the finalized features: Sluice's
// feature levels never change at run time.
const finalizedFeaturesEpoch = 1

// reportFeatures fills the supported and finalized features.
func reportFeatures(resp *kmsg.ApiVersionsResponse) {
	sf := kmsg.NewApiVersionsResponseSupportedFeature()
	sf.Name, sf.MinVersion, sf.MaxVersion = "share.version", 0, 1
	resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	ff := kmsg.NewApiVersionsResponseFinalizedFeature()
	ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = "share.version", 1, 1
	resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	resp.FinalizedFeaturesEpoch = finalizedFeaturesEpoch
}

// apiVersionKeys lists every served key, sorted by key.
func apiVersionKeys() []kmsg.ApiVersionsResponseApiKey {
	var out []kmsg.ApiVersionsResponseApiKey
	for _, s := range apiTable {
		if _, ok := supported(s.key); !ok {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = s.key, s.min, s.max
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b kmsg.ApiVersionsResponseApiKey) int { return int(a.ApiKey) - int(b.ApiKey) })
	return out
}
