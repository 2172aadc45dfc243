// Package config is the typed configuration of every dcpi role, read with
// viper from a file, DCPI_* environment variables and command-line flags,
// in increasing order of precedence, and validated with errors that name
// the offending key.
package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Sim configures a simulated host (package hwsim).
type Sim struct {
	CPUs      int    `mapstructure:"cpus"`
	Model     string `mapstructure:"model"`
	ClockMHz  int    `mapstructure:"clock_mhz"`
	Seed      uint64 `mapstructure:"seed"`
	Quantum   uint64 `mapstructure:"quantum"`
	TimeSlice uint64 `mapstructure:"time_slice"`
	PIDMax    int    `mapstructure:"pid_max"`
	Hostname  string `mapstructure:"hostname"`
	MaxMemMB  uint64 `mapstructure:"max_memory_mb"`
	Timing    bool   `mapstructure:"timing"`
	// Sysroot is the host directory dynamically linked programs find their
	// interpreter and shared libraries in (hwsim.Config.Sysroot): by
	// default the Alpha cross toolchain's.
	Sysroot string `mapstructure:"sysroot"`
	// Memory overrides fields of the 21164 memory-system parameters
	// (hwsim/timing.Params, e.g. bcache_size: 2097152, mispredict_penalty:
	// 6); keys are the field names in snake case.
	Memory map[string]any `mapstructure:"memory"`
}

// Config is the whole configuration file.
type Config struct {
	Sim         Sim         `mapstructure:"sim"`
	NATS        NATS        `mapstructure:"nats"`
	Coordinator Coordinator `mapstructure:"coordinator"`
	Aggregator  Aggregator  `mapstructure:"aggregator"`
	Node        Node        `mapstructure:"node"`
	// Enrollment is a host's installed enrollment (dcpi enroll install
	// writes /etc/dcpi/enrollment.yaml): its nats.urls, nats.creds,
	// nats.ca and sim.hostname replace the file's, its node.labels are
	// added to the file's.
	Enrollment string `mapstructure:"enrollment"`
}

// Defaults returns the embedded default configuration.
func Defaults() Config {
	c := Config{Sim: Sim{
		CPUs: 4, Model: "ev5", ClockMHz: 333, Seed: 1, Quantum: 20_000,
		TimeSlice: 3_330_000, PIDMax: 32768, Hostname: "alpha0", MaxMemMB: 4096, Timing: true,
		Sysroot: "/usr/alpha-linux-gnu", // hwsim.DefaultSysroot
	}}
	c.NATS, c.Coordinator, c.Aggregator, c.Node = clusterDefaults()
	return c
}

// Loader reads a Config. Flags bound with BindFlag override the file and the
// environment.
type Loader struct {
	v *viper.Viper
}

// NewLoader returns a loader seeded with the defaults and the DCPI_
// environment prefix (DCPI_SIM_CPUS sets sim.cpus).
func NewLoader() *Loader {
	v := viper.New()
	d := Defaults()
	v.SetDefault("sim.cpus", d.Sim.CPUs)
	v.SetDefault("sim.model", d.Sim.Model)
	v.SetDefault("sim.clock_mhz", d.Sim.ClockMHz)
	v.SetDefault("sim.seed", d.Sim.Seed)
	v.SetDefault("sim.quantum", d.Sim.Quantum)
	v.SetDefault("sim.time_slice", d.Sim.TimeSlice)
	v.SetDefault("sim.pid_max", d.Sim.PIDMax)
	v.SetDefault("sim.hostname", d.Sim.Hostname)
	v.SetDefault("sim.max_memory_mb", d.Sim.MaxMemMB)
	v.SetDefault("sim.timing", d.Sim.Timing)
	v.SetDefault("sim.sysroot", d.Sim.Sysroot)
	for key, val := range map[string]any{
		// Empty defaults make DCPI_NATS_CREDS and the others reach
		// Unmarshal: viper's environment covers only keys it knows.
		"enrollment": "", "nats.creds": d.NATS.Creds, "nats.ca": d.NATS.CA, "nats.cert": d.NATS.Cert, "nats.key": d.NATS.Key,
		"nats.embed_host": d.NATS.EmbedHost, "nats.embed_port": d.NATS.EmbedPort, "nats.stream_replicas": d.NATS.StreamReplicas,
		"coordinator.id": d.Coordinator.ID, "coordinator.raft_addr": d.Coordinator.RaftAddr,
		"coordinator.raft_tls": d.Coordinator.RaftTLS, "coordinator.raft_insecure": d.Coordinator.RaftInsecure,
		"coordinator.data_dir": d.Coordinator.DataDir, "coordinator.heartbeat_timeout": d.Coordinator.HeartbeatTimeout, "coordinator.epoch_every": d.Coordinator.EpochEvery,
		"coordinator.retention.full": d.Coordinator.Retention.Full, "coordinator.retention.merge_to": d.Coordinator.Retention.MergeTo, "coordinator.retention.keep": d.Coordinator.Retention.Keep,
		"aggregator.fetch_max": d.Aggregator.FetchMax, "aggregator.fetch_wait": d.Aggregator.FetchWait,
		"aggregator.max_proposal_entries": d.Aggregator.MaxProposalEntries, "aggregator.in_flight": d.Aggregator.InFlight, "aggregator.max_pending_entries": d.Aggregator.MaxPendingEntries, "aggregator.fold_hosts": d.Aggregator.FoldHosts,
		"node.mix": d.Node.Mix, "node.flush_every": d.Node.FlushEvery, "node.publish_every": d.Node.PublishEvery, "node.heartbeat": d.Node.Heartbeat,
		"node.max_buffered_mb": d.Node.MaxBufferedMB, "node.stacks": d.Node.Stacks, "node.retain_mb": d.Node.RetainMB,
		"node.profileme": d.Node.ProfileMe, "node.me_paired": d.Node.MePaired,
	} {
		v.SetDefault(key, val)
	}
	v.SetEnvPrefix("DCPI")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	return &Loader{v: v}
}

// BindFlag makes flag, when set, override key.
func (l *Loader) BindFlag(key string, flag *pflag.Flag) error {
	if flag == nil {
		return fmt.Errorf("config: no flag for %s", key)
	}
	return l.v.BindPFlag(key, flag)
}

// FlagKeys are the configuration keys the commands' flags set, by key:
// a flag of that name overrides the key's value from the file and the
// environment (LoadFlags).
var FlagKeys = map[string]string{
	"coordinator.id": "id", "coordinator.raft_addr": "raft-addr", "coordinator.data_dir": "data-dir",
	"coordinator.raft_tls": "raft-tls", "coordinator.raft_insecure": "raft-insecure",
	"coordinator.peers": "peers", "coordinator.epoch_every": "epoch-every", "nats.urls": "nats", "nats.embed_port": "nats-port",
	"sim.cpus": "cpus", "sim.seed": "seed", "sim.model": "model", "sim.timing": "timing", "sim.hostname": "host", "sim.sysroot": "sysroot",
	"node.mix": "mix", "node.workloads": "workloads", "node.seconds": "seconds", "node.flush_every": "flush-every", "node.publish_every": "publish-every",
	"node.stacks": "stacks", "node.values": "values", "node.profileme": "profileme", "node.me_paired": "me-paired",
	"node.labels": "label", "node.per_process": "per-process",
}

// MachineFlagKeys are the FlagKeys of the simulated machine alone: what
// the commands that run a machine but play no role in a cluster bind (a
// query tool's --host is a filter, not sim.hostname).
var MachineFlagKeys = map[string]string{"sim.cpus": "cpus", "sim.seed": "seed", "sim.model": "model", "sim.timing": "timing", "sim.sysroot": "sysroot"}

// LoadFlags loads file (if not empty) and the environment, with every
// flag of fs that keys (FlagKeys or MachineFlagKeys) names bound to its
// key.
func LoadFlags(file string, fs *pflag.FlagSet, keys map[string]string) (Config, error) {
	l := NewLoader()
	for key, name := range keys {
		if fl := fs.Lookup(name); fl != nil {
			if err := l.BindFlag(key, fl); err != nil {
				return Config{}, err
			}
		}
	}
	return l.Load(file)
}

// Load reads file (if not empty) and returns the validated configuration.
func (l *Loader) Load(file string) (Config, error) {
	if file != "" {
		l.v.SetConfigFile(file)
		if err := l.v.ReadInConfig(); err != nil {
			var nf viper.ConfigFileNotFoundError
			if errors.As(err, &nf) {
				return Config{}, fmt.Errorf("config: %s: not found", file)
			}
			return Config{}, fmt.Errorf("config: %s: %w", file, err)
		}
		if err := checkKeys(l.v.AllKeys()); err != nil {
			return Config{}, fmt.Errorf("config: %s: %w", file, err)
		}
	}
	if err := l.mergeEnrollment(l.v.GetString("enrollment")); err != nil {
		return Config{}, err
	}
	if err := l.checkDurations(); err != nil {
		return Config{}, err
	}
	var c Config
	if err := l.v.UnmarshalExact(&c); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// enrollmentKeys are the keys an enrollment file may set: the host's
// identity and its way to the cluster, nothing of what it runs.
var enrollmentKeys = map[string]bool{"nats.urls": true, "nats.creds": true, "nats.ca": true, "sim.hostname": true}

// mergeEnrollment reads the enrollment file (if any) over the
// configuration file's values; the environment and flags still win.
func (l *Loader) mergeEnrollment(file string) error {
	if file == "" {
		return nil
	}
	ev := viper.New()
	ev.SetConfigFile(file)
	ev.SetConfigType("yaml")
	if err := ev.ReadInConfig(); err != nil {
		return fmt.Errorf("config: enrollment %s: %w", file, err)
	}
	for _, k := range ev.AllKeys() {
		if !enrollmentKeys[k] && !strings.HasPrefix(k, "node.labels.") {
			return fmt.Errorf("config: enrollment %s: key %q is not an enrollment's", file, k)
		}
	}
	if err := l.v.MergeConfigMap(ev.AllSettings()); err != nil {
		return fmt.Errorf("config: enrollment %s: %w", file, err)
	}
	return nil
}

// checkDurations refuses a duration setting that does not parse, in one
// line naming the key and the value: the decoder's own error takes
// several lines and leaves the value out.
func (l *Loader) checkDurations() error {
	for _, k := range durationKeys(reflect.TypeFor[Config](), "") {
		s, ok := l.v.Get(k).(string)
		if !ok {
			continue // a number or unset: the decoder takes it
		}
		if _, err := time.ParseDuration(s); err != nil {
			return fmt.Errorf("config: %s = %q: not a duration (want one such as 90s, 1h or 0)", k, s)
		}
	}
	return nil
}

// durationKeys lists the keys of t's time.Duration fields, under prefix.
func durationKeys(t reflect.Type, prefix string) []string {
	var out []string
	for f := range t.Fields() {
		key := prefix + f.Tag.Get("mapstructure")
		switch {
		case f.Type == reflect.TypeFor[time.Duration]():
			out = append(out, key)
		case f.Type.Kind() == reflect.Struct:
			out = append(out, durationKeys(f.Type, key+".")...)
		}
	}
	return out
}

// known lists every key a file may set, so a misspelt key is an error
// rather than a silently ignored setting.
var known = map[string]bool{
	"sim.cpus": true, "sim.model": true, "sim.clock_mhz": true, "sim.seed": true,
	"sim.quantum": true, "sim.time_slice": true, "sim.pid_max": true,
	"sim.hostname": true, "sim.max_memory_mb": true, "sim.timing": true, "sim.sysroot": true, "enrollment": true,
}

func init() {
	for _, k := range clusterKeys {
		known[k] = true
	}
}

func checkKeys(keys []string) error {
	for _, k := range keys {
		if strings.HasPrefix(k, "sim.memory.") {
			continue // checked against the parameter table by the simulator
		}
		if strings.HasPrefix(k, "node.labels.") {
			continue // free-form
		}
		if !known[k] {
			return fmt.Errorf("unknown key %q", k)
		}
	}
	return nil
}

// Validate reports the first invalid setting, naming its key.
func (c Config) Validate() error {
	s := c.Sim
	switch {
	case s.CPUs < 1 || s.CPUs > 64:
		return fmt.Errorf("config: sim.cpus = %d: want 1 to 64", s.CPUs)
	case s.ClockMHz < 1 || s.ClockMHz > 10_000:
		return fmt.Errorf("config: sim.clock_mhz = %d: want 1 to 10000", s.ClockMHz)
	case s.Quantum < 100:
		return fmt.Errorf("config: sim.quantum = %d: want at least 100 cycles", s.Quantum)
	case s.TimeSlice < s.Quantum:
		return fmt.Errorf("config: sim.time_slice = %d: shorter than sim.quantum (%d)", s.TimeSlice, s.Quantum)
	case s.PIDMax < 301 || s.PIDMax > 4_194_304:
		return fmt.Errorf("config: sim.pid_max = %d: want 301 to 4194304", s.PIDMax)
	case s.MaxMemMB < 1:
		return fmt.Errorf("config: sim.max_memory_mb = %d: want at least 1", s.MaxMemMB)
	case s.Model == "":
		return fmt.Errorf("config: sim.model is empty")
	}
	return c.validateCluster()
}
