package config

import (
	"fmt"
	"net"
	"strings"
	"time"
)

// NATS configures the connection to the message system. With no URLs, the
// roles that embed a server (coordinator, demo) start one.
type NATS struct {
	URLs []string `mapstructure:"urls"`
	// Creds is a NATS credentials file: an NKey seed as dcpi's servers
	// issue them (docs/security.md), or a JWT with its seed. Empty: the
	// role finds its own when the server is this user's on this machine.
	Creds string `mapstructure:"creds"`
	// CA, Cert and Key enable TLS: the server's CA, and a client
	// certificate and key when the server asks for one.
	CA   string `mapstructure:"ca"`
	Cert string `mapstructure:"cert"`
	Key  string `mapstructure:"key"`
	// Embed* configure the embedded server (when URLs is empty).
	EmbedHost string `mapstructure:"embed_host"`
	EmbedPort int    `mapstructure:"embed_port"`
	// StreamReplicas is the JetStream replication of the batch stream (1
	// with one server; 3 on a NATS cluster).
	StreamReplicas int `mapstructure:"stream_replicas"`
	// SyncAlways makes the embedded server fsync every message before
	// acknowledging it; SyncInterval is its fsync period otherwise (0:
	// nats-server's 2 minutes). docs/durability.md says why the default
	// is neither needed nor paid for: nodes retain batches until applied.
	SyncAlways   bool          `mapstructure:"sync_always"`
	SyncInterval time.Duration `mapstructure:"sync_interval"`
}

// Coordinator configures one replica of the coordinator.
type Coordinator struct {
	ID       string `mapstructure:"id"`
	RaftAddr string `mapstructure:"raft_addr"`
	// RaftTLS is the replica's Raft credential file (dcpi coordinator
	// raft-cert issues it): Raft runs over mutual TLS with it. Without
	// one, Raft is plain TCP, allowed on loopback only unless
	// RaftInsecure says the network is the replicas' alone.
	RaftTLS      string `mapstructure:"raft_tls"`
	RaftInsecure bool   `mapstructure:"raft_insecure"`
	DataDir      string `mapstructure:"data_dir"`
	// Peers are "id=host:port" for every voter when the cluster is first
	// formed (this replica included); ignored once DataDir holds a log.
	Peers []string `mapstructure:"peers"`
	// HeartbeatTimeout is how long a node may be silent before it is no
	// longer live (and no longer waited for when epochs are sealed).
	HeartbeatTimeout time.Duration `mapstructure:"heartbeat_timeout"`
	// EpochEvery is the period of the epochs the leader cuts on its own,
	// at every multiple of it in wall-clock time (an hourly schedule cuts
	// at :00); 0 cuts by hand only (dcpi epoch cut), which a schedule
	// still allows (coordinator.Config.EpochEvery, docs/cluster.md).
	EpochEvery time.Duration `mapstructure:"epoch_every"`
	// Retention is the policy the leader applies to sealed epochs
	// (coordinator.Retention, docs/cluster.md "Retention").
	Retention Retention `mapstructure:"retention"`
}

// Retention is coordinator.retention: epochs that ended less than Full
// ago stay as they are; older sealed ones are merged into one per window
// of MergeTo (aligned to wall-clock time); sealed epochs that ended more
// than Keep ago are deleted, what they held counted as expired. 0 turns
// a part off.
type Retention struct {
	Full    time.Duration `mapstructure:"full"`
	MergeTo time.Duration `mapstructure:"merge_to"`
	Keep    time.Duration `mapstructure:"keep"`
}

// check refuses a policy that is negative, contradicts itself, or could
// reach epochs not yet sealed (an epoch may stay unsealed for up to
// epoch_every after it ends and a seal or two more), in one line naming
// the key. coordinator.CheckRetention applies the same rules when a
// replica starts (config imports no role).
func (r Retention) check(epochEvery time.Duration) error {
	const k = "config: coordinator.retention."
	switch {
	case r.Full < 0:
		return fmt.Errorf(k+"full = %v: want 0 (merge nothing) or a positive duration", r.Full)
	case r.MergeTo < 0:
		return fmt.Errorf(k+"merge_to = %v: want a positive duration", r.MergeTo)
	case r.Keep < 0:
		return fmt.Errorf(k+"keep = %v: want 0 (delete nothing) or a positive duration", r.Keep)
	case r.Full > 0 && r.MergeTo == 0:
		return fmt.Errorf(k+"merge_to is 0: full = %v needs the window to merge older epochs into", r.Full)
	case r.Full == 0 && r.MergeTo > 0:
		return fmt.Errorf(k+"merge_to = %v needs full, the age from which epochs are merged", r.MergeTo)
	case r.Keep > 0 && r.Full > 0 && r.Keep < r.Full:
		return fmt.Errorf(k+"keep = %v is shorter than full = %v: epochs would be deleted before they are merged", r.Keep, r.Full)
	case r.Full > 0 && epochEvery > 0 && r.Full < 2*epochEvery:
		return fmt.Errorf(k+"full = %v: want at least twice coordinator.epoch_every (%v), or it would reach epochs not yet sealed", r.Full, 2*epochEvery)
	case r.Keep > 0 && epochEvery > 0 && r.Keep < 2*epochEvery:
		return fmt.Errorf(k+"keep = %v: want at least twice coordinator.epoch_every (%v), or it would reach epochs not yet sealed", r.Keep, 2*epochEvery)
	case r.MergeTo > 0 && epochEvery > 0 && r.MergeTo <= epochEvery:
		return fmt.Errorf(k+"merge_to = %v: want longer than coordinator.epoch_every (%v), or a window holds one epoch and nothing merges", r.MergeTo, epochEvery)
	}
	return nil
}

// MinEpochEvery is the shortest coordinator.epoch_every:
// coordinator.MinEpochEvery, which coordinator.Start checks again (config
// imports no role).
const MinEpochEvery = time.Second

// Aggregator configures an aggregator.
type Aggregator struct {
	FetchMax           int           `mapstructure:"fetch_max"`
	FetchWait          time.Duration `mapstructure:"fetch_wait"`
	MaxProposalEntries int           `mapstructure:"max_proposal_entries"`
	// InFlight is how many proposals an aggregator keeps waiting for
	// their commit at once (aggregator.Config.InFlight).
	InFlight int `mapstructure:"in_flight"`
	// MaxPendingEntries bounds the entries of the batches an aggregator
	// has fetched and not yet settled (aggregator.Config.MaxPendingEntries):
	// its memory under a backlog.
	MaxPendingEntries int `mapstructure:"max_pending_entries"`
	// FoldHosts folds a host's CPUs into one delta before Raft
	// (aggregator.Limits.FoldHosts): every replica must run a dcpi that
	// knows host folds, so an upgrade turns it on last.
	FoldHosts bool `mapstructure:"fold_hosts"`
}

// Node configures a node agent in a cluster.
type Node struct {
	Labels    map[string]string `mapstructure:"labels"`
	Mix       string            `mapstructure:"mix"`
	Workloads []string          `mapstructure:"workloads"`
	// Seconds of simulated time to run (0: until stopped).
	Seconds    float64 `mapstructure:"seconds"`
	FlushEvery float64 `mapstructure:"flush_every"` // simulated seconds between full drains
	// PublishEvery is the daemon's publish window, in simulated seconds:
	// drains are merged per CPU and published as one batch per window
	// (0: a batch per drain; node.Config.PublishEvery).
	PublishEvery float64       `mapstructure:"publish_every"`
	Heartbeat    time.Duration `mapstructure:"heartbeat"`
	// MaxBufferedMB bounds the batches held while NATS is unreachable.
	MaxBufferedMB int `mapstructure:"max_buffered_mb"`
	// Stacks records sampled call stacks beside the flat profile.
	Stacks bool `mapstructure:"stacks"`
	// Values names the value-sampling module (node/valuemod; "": off).
	Values string `mapstructure:"values"`
	// RetainMB bounds the batches a node keeps after JetStream
	// acknowledged them, until the coordinator has applied them (the
	// end-to-end acknowledgment, docs/durability.md); 0 turns it off.
	RetainMB int `mapstructure:"retain_mb"`
	// ProfileMe samples instructions with ProfileMe beside the counters
	// (docs/profileme.md); MePaired samples them in pairs (sec. 4.2),
	// which needs ProfileMe on.
	ProfileMe bool `mapstructure:"profileme"`
	MePaired  bool `mapstructure:"me_paired"`
	// PerProcess are the images whose profiles the node keeps per
	// process (DCPI sec. 4.3): paths, file names, or "all"
	// (node.Config.PerProcess).
	PerProcess []string `mapstructure:"per_process"`
	// PerThread keeps the per_process images' profiles per thread
	// instead (node.Config.PerThread; docs/node.md).
	PerThread bool `mapstructure:"per_thread"`
	// ProcessLabels are the user's process labels: the processes running
	// Binary (a path or a file name, as per_process names images) carry
	// Labels, and their children inherit them (node.Config.ProcessLabels;
	// docs/node.md).
	ProcessLabels []ProcessLabels `mapstructure:"process_labels"`
}

// ProcessLabels are one entry of node.process_labels.
type ProcessLabels struct {
	Binary string            `mapstructure:"binary"`
	Labels map[string]string `mapstructure:"labels"`
}

// ProcessLabelMap is node.process_labels by binary (node.Config's form);
// entries for one binary merge, a later one's labels over an earlier's.
// nil when there are none.
func (n Node) ProcessLabelMap() map[string]map[string]string {
	if len(n.ProcessLabels) == 0 {
		return nil
	}
	out := map[string]map[string]string{}
	for _, e := range n.ProcessLabels {
		if out[e.Binary] == nil {
			out[e.Binary] = map[string]string{}
		}
		for k, v := range e.Labels {
			out[e.Binary][k] = v
		}
	}
	return out
}

// DefaultPublishEvery is node.publish_every's default, in simulated
// seconds: ten drains at the default flush_every. Measured on the
// default mix (docs/loadgen.md, "The publish window"), it cuts a host's
// batches tenfold and its entries/s as stored from 9,009 to 3,932, while
// a live query waits at most a second more; longer windows (DCPI's daemon
// merged for minutes) cut entries further, for fleets of many hosts.
const DefaultPublishEvery = 1.0

func clusterDefaults() (NATS, Coordinator, Aggregator, Node) {
	return NATS{EmbedHost: "127.0.0.1", EmbedPort: 4222, StreamReplicas: 1},
		Coordinator{ID: "c1", RaftAddr: "127.0.0.1:7001", DataDir: "dcpi-coord", HeartbeatTimeout: 3 * time.Second},
		Aggregator{FetchMax: 256, FetchWait: 500 * time.Millisecond, MaxProposalEntries: 40_000, InFlight: 4, MaxPendingEntries: 2_000_000, FoldHosts: true},
		Node{Mix: "default", FlushEvery: 0.1, PublishEvery: DefaultPublishEvery, Heartbeat: 500 * time.Millisecond, MaxBufferedMB: 16, RetainMB: 64}
}

var clusterKeys = []string{
	"nats.urls", "nats.creds", "nats.ca", "nats.cert", "nats.key", "nats.embed_host", "nats.embed_port", "nats.stream_replicas", "nats.sync_always", "nats.sync_interval",
	"coordinator.id", "coordinator.raft_addr", "coordinator.raft_tls", "coordinator.raft_insecure", "coordinator.data_dir", "coordinator.peers", "coordinator.heartbeat_timeout", "coordinator.epoch_every",
	"coordinator.retention.full", "coordinator.retention.merge_to", "coordinator.retention.keep",
	"aggregator.fetch_max", "aggregator.fetch_wait", "aggregator.max_proposal_entries", "aggregator.in_flight", "aggregator.max_pending_entries", "aggregator.fold_hosts",
	"node.labels", "node.mix", "node.workloads", "node.seconds", "node.flush_every", "node.publish_every", "node.heartbeat", "node.max_buffered_mb", "node.stacks", "node.values", "node.retain_mb",
	"node.profileme", "node.me_paired", "node.per_process", "node.per_thread", "node.process_labels",
}

// ParsePeers parses "id=host:port" peers.
func ParsePeers(peers []string) ([][2]string, error) {
	var out [][2]string
	seen := map[string]bool{}
	for _, p := range peers {
		id, addr, ok := strings.Cut(p, "=")
		if !ok || id == "" {
			return nil, fmt.Errorf("coordinator.peers: %q: want id=host:port", p)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("coordinator.peers: %q: %v", p, err)
		}
		if seen[id] {
			return nil, fmt.Errorf("coordinator.peers: id %q twice", id)
		}
		seen[id] = true
		out = append(out, [2]string{id, addr})
	}
	return out, nil
}

func (c Config) validateCluster() error {
	n, co, a, nd := c.NATS, c.Coordinator, c.Aggregator, c.Node
	switch {
	case n.EmbedPort < 0 || n.EmbedPort > 65535:
		return fmt.Errorf("config: nats.embed_port = %d: want 0 to 65535", n.EmbedPort)
	case n.StreamReplicas < 1 || n.StreamReplicas > 5:
		return fmt.Errorf("config: nats.stream_replicas = %d: want 1 to 5", n.StreamReplicas)
	case (n.Cert == "") != (n.Key == ""):
		return fmt.Errorf("config: nats.cert and nats.key go together")
	case co.ID == "":
		return fmt.Errorf("config: coordinator.id is empty")
	case co.HeartbeatTimeout < 100*time.Millisecond:
		return fmt.Errorf("config: coordinator.heartbeat_timeout = %v: want at least 100ms", co.HeartbeatTimeout)
	case co.EpochEvery < 0 || co.EpochEvery > 0 && co.EpochEvery < MinEpochEvery:
		return fmt.Errorf("config: coordinator.epoch_every = %v: want 0 (cut by hand only) or at least %v", co.EpochEvery, MinEpochEvery)
	case a.FetchMax < 1 || a.FetchMax > 10_000:
		return fmt.Errorf("config: aggregator.fetch_max = %d: want 1 to 10000", a.FetchMax)
	case a.FetchWait <= 0:
		return fmt.Errorf("config: aggregator.fetch_wait = %v: want a positive duration", a.FetchWait)
	case a.MaxProposalEntries < 100 || a.MaxProposalEntries > 150_000:
		return fmt.Errorf("config: aggregator.max_proposal_entries = %d: want 100 to 150000 (a proposal must fit a 1 MB NATS message)", a.MaxProposalEntries)
	case a.InFlight < 1 || a.InFlight > 64:
		return fmt.Errorf("config: aggregator.in_flight = %d: want 1 to 64 proposals waiting for their commit at once", a.InFlight)
	case a.MaxPendingEntries < a.MaxProposalEntries || a.MaxPendingEntries > 1_000_000_000:
		return fmt.Errorf("config: aggregator.max_pending_entries = %d: want from aggregator.max_proposal_entries (%d) to 1000000000 entries fetched and not yet settled", a.MaxPendingEntries, a.MaxProposalEntries)
	case nd.MePaired && !nd.ProfileMe:
		return fmt.Errorf("config: node.me_paired needs node.profileme: pairs are ProfileMe samples")
	case nd.Seconds < 0:
		return fmt.Errorf("config: node.seconds = %v: want 0 (no limit) or more", nd.Seconds)
	case nd.FlushEvery <= 0:
		return fmt.Errorf("config: node.flush_every = %v: want a positive number of simulated seconds", nd.FlushEvery)
	case nd.PublishEvery < 0 || nd.PublishEvery > 3600:
		return fmt.Errorf("config: node.publish_every = %v: want 0 (a batch per drain) to 3600 simulated seconds", nd.PublishEvery)
	case nd.Heartbeat < 10*time.Millisecond:
		return fmt.Errorf("config: node.heartbeat = %v: want at least 10ms", nd.Heartbeat)
	case n.SyncInterval < 0:
		return fmt.Errorf("config: nats.sync_interval = %v: want 0 (the server's default) or a positive duration", n.SyncInterval)
	case nd.RetainMB < 0:
		return fmt.Errorf("config: node.retain_mb = %d: want 0 (off) or more", nd.RetainMB)
	case nd.MaxBufferedMB < 1:
		return fmt.Errorf("config: node.max_buffered_mb = %d: want at least 1", nd.MaxBufferedMB)
	}
	if co.RaftTLS != "" && co.RaftInsecure {
		return fmt.Errorf("config: coordinator.raft_tls and coordinator.raft_insecure: one or the other")
	}
	if err := co.Retention.check(co.EpochEvery); err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(co.RaftAddr); err != nil {
		return fmt.Errorf("config: coordinator.raft_addr = %q: %v", co.RaftAddr, err)
	}
	if _, err := ParsePeers(co.Peers); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}
