// ApiVersions (key 18), v0–v5: the API keys and version ranges this broker
// serves, derived from apiTable (registry.go) — only keys with a registered
// handler are listed.
//
// Features (v3+, tagged fields): the supported features and their ranges
// (internal/features: metadata.version, kraft.version, transaction.version,
// group.version, share.version) and the finalized levels with their epoch,
// which UpdateFeatures changes (update_features.go); Admin.describeFeatures
// and `kafka-features describe` read them here.
//
// An unsupported ApiVersions version never reaches this handler: the wire
// layer answers it with a v0 UNSUPPORTED_VERSION response (KIP-511).

package broker

import (
	"context"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-broker/sluice/internal/features"
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
	// v5 (KIP-1242): a client that names the cluster and node it means to
	// reach and finds another is told to rebootstrap, as Kafka does.
	if req.Version >= 5 && req.ClusterID != nil && (*req.ClusterID != b.ClusterID() || req.NodeID != b.self()) {
		resp.ErrorCode = kerr.RebootstrapRequired.Code
		return resp, nil
	}
	resp.ApiKeys = apiVersionKeys()
	if req.Version >= 3 {
		b.reportFeatures(resp)
	}
	return resp, nil
}

// reportFeatures fills the supported and finalized features as Kafka 4
// does: supported features whose minimum is 0 are left out below v4 (older
// clients cannot parse a 0 minimum, KIP-1022), finalized features at level
// 0 are left out, and the epoch is that of the finalized levels.
func (b *Broker) reportFeatures(resp *kmsg.ApiVersionsResponse) {
	for _, f := range features.Supported {
		if resp.Version < 4 && f.Min == 0 {
			continue
		}
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = f.Name, f.Min, f.Max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	}
	levels, epoch := b.finalizedFeatures()
	for _, name := range levels.Names() {
		if lvl := levels[name]; lvl > 0 {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = name, lvl, lvl
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
	}
	resp.FinalizedFeaturesEpoch = epoch
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
