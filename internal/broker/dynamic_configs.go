package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-broker/sluice/internal/config"
	"github.com/sluice-broker/sluice/internal/controller"
	"github.com/sluice-broker/sluice/internal/metadata"
	"github.com/sluice-broker/sluice/internal/vfs"
)

// Dynamic broker configs (Kafka's DYNAMIC_BROKER_CONFIG and
// DYNAMIC_DEFAULT_BROKER_CONFIG): IncrementalAlterConfigs and AlterConfigs
// on a BROKER resource — this broker's id, or "" for the cluster-wide
// default — set the configs config.LiveDynamic accepts. Precedence is
// Kafka's: this broker's dynamic value > the cluster-wide dynamic default >
// server.properties > the default.
//
// A single node keeps both sets in broker-configs.json in its data
// directory (read at start, before the logs open). On a cluster node they
// are metadata records (SetBrokerConfigs) decided by the active controller;
// every node applies its own and the default set when it publishes the
// image, so a change made through any node reaches every node.
//
// Applying a change swaps the broker's effective configuration (conf): the
// topic-config defaults are re-resolved for every topic without its own
// override and applied to the partition logs live, and the replication
// throttles are rebuilt.

const brokerConfigsFile = "broker-configs.json"

const brokerConfigsFileVersion = 1

type brokerConfigsDoc struct {
	Version int                          `json:"version"`
	Configs map[string]map[string]string `json:"configs"` // by entity: "" or a broker id
}

// dynConfigs is the broker's dynamic config state.
type dynConfigs struct {
	mu sync.Mutex // serialises changes and their application
	// eff is the effective configuration (static + dynamic); nil until
	// a dynamic config is first applied (conf then returns b.cfg).
	eff atomic.Pointer[config.Broker]
	// entities are the dynamic sets by entity (this node's id and "").
	entities map[string]map[string]string
	// scramPub is what publishScram last fed the credential store
	// (cluster_scram.go; publish goroutine only).
	scramPub scramPublished
	// conns are the listeners' connection limits (connection_limits.go;
	// nil until the listeners are set up).
	conns atomic.Pointer[connLimits]
}

// conf is the broker's effective configuration: server.properties with the
// dynamic broker configs on top. Read it for every config that can change
// at runtime; b.cfg is the static configuration.
func (b *Broker) conf() *config.Broker {
	if c := b.dyn.eff.Load(); c != nil {
		return c
	}
	return b.cfg
}

func (b *Broker) selfEntity() string { return strconv.Itoa(int(b.nodeID)) }

// openDynamicConfigs reads a single node's broker-configs.json and applies
// it. A cluster node takes its dynamic configs from the metadata image.
func (b *Broker) openDynamicConfigs() error {
	if b.clusterCfg != nil {
		return nil
	}
	data, err := vfs.ReadFile(b.fs, filepath.Join(b.dataDir, brokerConfigsFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("sluice: reading dynamic broker configs: %w", err)
	}
	var d brokerConfigsDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return fmt.Errorf("sluice: %s is corrupt: %w", brokerConfigsFile, err)
	}
	if d.Version != brokerConfigsFileVersion {
		return fmt.Errorf("sluice: %s has version %d; this Sluice reads version %d", brokerConfigsFile, d.Version, brokerConfigsFileVersion)
	}
	b.dyn.mu.Lock()
	defer b.dyn.mu.Unlock()
	if err := b.applyDynamicLocked(d.Configs, false); err != nil {
		return fmt.Errorf("sluice: %s: %w", brokerConfigsFile, err)
	}
	return nil
}

// applyDynamicLocked makes entities (by entity; only this node's and ""
// are read) the dynamic configs in effect. With relog, every partition log
// gets its re-resolved config (a cluster node's publish does that itself).
// Caller holds b.dyn.mu.
func (b *Broker) applyDynamicLocked(entities map[string]map[string]string, relog bool) error {
	self := b.selfEntity()
	if maps.Equal(b.dyn.entities[self], entities[self]) && maps.Equal(b.dyn.entities[""], entities[""]) && b.dyn.entities != nil {
		return nil
	}
	eff, err := b.cfg.WithDynamic(entities[self], entities[""])
	if err != nil {
		return err
	}
	first := b.dyn.entities == nil
	b.dyn.entities = map[string]map[string]string{self: maps.Clone(entities[self]), "": maps.Clone(entities[""])}
	b.dyn.eff.Store(eff)
	b.replQuotas.reset()
	if l := b.dyn.conns.Load(); l != nil {
		l.setLimits(intConfig(eff, "max.connections"), intConfig(eff, "max.connections.per.ip"))
	}
	if !first || len(entities[self])+len(entities[""]) > 0 {
		b.logger.Info("dynamic broker configs applied", "broker", entities[self], "cluster_default", entities[""])
	}
	if relog {
		b.relogAll()
	}
	return nil
}

// relogAll applies every topic's re-resolved config to its partition logs.
func (b *Broker) relogAll() {
	for _, t := range b.topics.List() {
		cfg, err := b.logConfig(t.Configs)
		if err != nil {
			b.logger.Error("topic config no longer resolves", "topic", t.Name, "err", err)
			continue
		}
		for p := int32(0); p < t.Partitions; p++ {
			if l := b.logs.Get(t.Name, p); l != nil && l.Config() != cfg {
				if err := l.SetConfig(cfg); err != nil {
					b.logger.Error("applying topic config to partition failed", "topic", t.Name, "partition", p, "err", err)
				}
			}
		}
	}
}

// publishBrokerConfigs applies the image's dynamic configs and SCRAM
// credentials (cluster_scram.go). Runs on the publish goroutine, before the
// topics (whose logs then get configs resolved with them).
func (b *Broker) publishBrokerConfigs(im *metadata.Image) {
	b.publishScram(im, &b.dyn.scramPub)
	b.dyn.mu.Lock()
	defer b.dyn.mu.Unlock()
	if err := b.applyDynamicLocked(im.BrokerConfigs, false); err != nil {
		b.logger.Error("the dynamic broker configs of the cluster metadata do not apply", "err", err)
	}
}

// currentDynamic returns entity's dynamic configs in effect.
func (b *Broker) currentDynamic(entity string) map[string]string {
	b.dyn.mu.Lock()
	defer b.dyn.mu.Unlock()
	if entity == "" {
		return maps.Clone(b.dyn.entities[""])
	}
	return maps.Clone(b.dyn.entities[b.selfEntity()])
}

// alterBrokerConfigs is the BROKER-resource path of both alter requests:
// next computes the entity's complete new dynamic set from the current one;
// the set is validated (unknown name INVALID_CONFIG, a config that cannot
// change at runtime INVALID_REQUEST, a bad value INVALID_CONFIG), checked
// against every topic, and unless validateOnly stored and applied. Caller
// holds adminMu.
func (b *Broker) alterBrokerConfigs(name string, validateOnly bool, next func(current map[string]string) (map[string]string, error)) error {
	if err := b.checkBrokerResource(name); err != nil {
		return err
	}
	// On a cluster node another node may change the same entity at the
	// same time: the controller refuses a change computed from a stale set
	// (INVALID_UPDATE_VERSION) and it is computed again from the newer one.
	for attempt := 0; ; attempt++ {
		err := b.alterBrokerConfigsOnce(name, validateOnly, next)
		var be *Error
		if attempt >= 40 || !errors.As(err, &be) || be.Code != kerr.InvalidUpdateVersion.Code {
			return err
		}
		time.Sleep(25 * time.Millisecond) // until this node has published the newer set
	}
}

func (b *Broker) alterBrokerConfigsOnce(name string, validateOnly bool, next func(current map[string]string) (map[string]string, error)) error {
	entity := name
	cur := b.currentDynamic(entity)
	set, err := next(cur)
	if err != nil {
		return err
	}
	if maps.Equal(cur, set) {
		return nil
	}
	if err := config.ValidateDynamic(set); err != nil {
		return err
	}
	per, def := b.currentDynamic(b.selfEntity()), b.currentDynamic("")
	if entity == "" {
		def = set
	} else {
		per = set
	}
	eff, err := b.cfg.WithDynamic(per, def)
	if err != nil {
		return asInvalidConfig(err)
	}
	for _, t := range b.topics.List() {
		if err := resolveLogConfig(eff, t.Configs); err != nil {
			return errorf(kerr.InvalidConfig, "Invalid config for topic %s with these broker configs: %v", t.Name, err)
		}
	}
	if validateOnly {
		return nil
	}
	if b.cluster != nil {
		req := controller.BrokerConfigsRequest{Entities: map[string]map[string]string{entity: set},
			Base: map[string]map[string]string{entity: cur}}
		if set == nil {
			req.Entities[entity] = map[string]string{}
		}
		if err := decideOffset(b.cluster, "broker-configs", b.cluster.ctrl.SetBrokerConfigs, req); err != nil {
			return asBrokerError(err)
		}
		return nil
	}
	b.dyn.mu.Lock()
	defer b.dyn.mu.Unlock()
	all := map[string]map[string]string{b.selfEntity(): per, "": def}
	doc := brokerConfigsDoc{Version: brokerConfigsFileVersion, Configs: map[string]map[string]string{}}
	for k, v := range all {
		if len(v) > 0 {
			doc.Configs[k] = v
		}
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := vfs.WriteFileAtomic(b.fs, filepath.Join(b.dataDir, brokerConfigsFile), append(data, '\n'), 0o644); err != nil {
		return &Error{Code: kerr.KafkaStorageError.Code, Msg: "storing dynamic broker configs: " + err.Error()}
	}
	return b.applyDynamicLocked(all, true)
}

// resolveLogConfig checks that a topic's overrides resolve into a valid log
// config on top of cfg.
func resolveLogConfig(cfg *config.Broker, overrides map[string]string) error {
	c, err := logConfigOf(cfg, overrides)
	if err != nil {
		return err
	}
	return c.Validate()
}

// registerBrokerConfigHandlers serves the controller's dynamic broker
// config method on the peer listener.
func (c *clusterNode) registerBrokerConfigHandlers() {
	handle(c.srv, "broker-configs", c.ctrl.SetBrokerConfigs)
	handle(c.srv, "alter-scram", c.ctrl.AlterScram) // cluster_scram.go
}

// intConfig is an Int broker config's effective value (validated).
func intConfig(c *config.Broker, name string) int {
	v, _ := c.Value(name)
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return math.MaxInt32
	}
	return n
}
