package broker

import (
	"maps"

	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/metadata"
)

// On a cluster node, group configs (IncrementalAlterConfigs on a GROUP
// resource: the share groups' share.auto.offset.reset, lock duration, …)
// live in the cluster metadata, as in Kafka: a change through any broker
// is decided by the active controller, and every broker applies the
// image's configs to its share groups, so that the broker leading a share
// partition uses the group's configs wherever they were set. A single node
// keeps them in share-group-configs.json (share_group_configs.go).

// setGroupConfigsCluster sends a group's new configs to the controller and
// waits until this broker has published them.
func (b *Broker) setGroupConfigsCluster(group string, cfgs map[string]string) error {
	req := controller.SetGroupConfigsRequest{Group: group, Configs: cfgs}
	if err := decideOffset(b.cluster, "group-configs", b.cluster.ctrl.SetGroupConfigs, req); err != nil {
		return asBrokerError(err)
	}
	return nil
}

// publishGroupConfigs gives the share groups the image's group configs
// when they changed. Runs on the publish goroutine only.
func (b *Broker) publishGroupConfigs(im *metadata.Image) {
	if b.shares == nil {
		return
	}
	cur := b.shares.AllGroupConfigs()
	if maps.EqualFunc(cur, im.GroupConfigs, maps.Equal[map[string]string]) {
		return
	}
	b.shares.ReplaceGroupConfigs(im.GroupConfigs)
}
