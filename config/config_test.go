package config

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestDefaultsAreValid(t *testing.T) {
	c, err := NewLoader().Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Sim.CPUs != 4 || c.Sim.Model != "ev5" || c.Sim.ClockMHz != 333 || !c.Sim.Timing {
		t.Fatalf("defaults %+v", c.Sim)
	}
}

func TestPrecedenceFileEnvFlag(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	os.WriteFile(file, []byte("sim:\n  cpus: 2\n  seed: 9\n  model: ev56\n  memory:\n    bcache_size: 1048576\n"), 0o644)
	t.Setenv("DCPI_SIM_SEED", "11")
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.String("model", "ev5", "")
	fs.Parse([]string{"--model", "ev6"})
	l := NewLoader()
	if err := l.BindFlag("sim.model", fs.Lookup("model")); err != nil {
		t.Fatal(err)
	}
	c, err := l.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sim.CPUs != 2 || c.Sim.Seed != 11 || c.Sim.Model != "ev6" {
		t.Fatalf("got cpus %d seed %d model %s; want 2 (file), 11 (env), ev6 (flag)", c.Sim.CPUs, c.Sim.Seed, c.Sim.Model)
	}
	if c.Sim.Memory["bcache_size"] == nil {
		t.Fatalf("sim.memory not passed through: %v", c.Sim.Memory)
	}
}

func TestBadConfigNamesTheKey(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ body, want string }{
		{"sim:\n  cpus: 0\n", "sim.cpus = 0"},
		{"sim:\n  cpu: 2\n", `unknown key "sim.cpu"`},
		{"sim:\n  cpus: [\n", "c.yaml"},
		{"sim:\n  pid_max: 100\n", "sim.pid_max = 100"},
		{"sim:\n  quantum: 5000\n  time_slice: 100\n", "sim.time_slice = 100"},
	} {
		file := filepath.Join(dir, "c.yaml")
		os.WriteFile(file, []byte(tc.body), 0o644)
		_, err := NewLoader().Load(file)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want one mentioning %q", tc.body, err, tc.want)
		}
	}
	if _, err := NewLoader().Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("a missing file loaded")
	}
}

func TestClusterConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	os.WriteFile(file, []byte(`nats:
  urls: [nats://a:4222, nats://b:4222]
coordinator:
  id: c2
  raft_addr: 10.0.0.2:7001
  raft_tls: /etc/dcpi/c2-raft.pem
  peers: [c1=10.0.0.1:7001, c2=10.0.0.2:7001, c3=10.0.0.3:7001]
  heartbeat_timeout: 5s
  epoch_every: 1h
node:
  labels: {rack: r1, role: web}
  heartbeat: 250ms
  profileme: true
  me_paired: true
`), 0o644)
	c, err := NewLoader().Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.NATS.URLs) != 2 || c.Coordinator.ID != "c2" || c.Coordinator.HeartbeatTimeout.Seconds() != 5 || c.Coordinator.EpochEvery != time.Hour ||
		c.Node.Labels["rack"] != "r1" || c.Node.Heartbeat.Milliseconds() != 250 || c.Aggregator.FetchMax != 256 || c.Aggregator.InFlight != 4 || !c.Aggregator.FoldHosts ||
		!c.Node.ProfileMe || !c.Node.MePaired || c.Coordinator.RaftTLS != "/etc/dcpi/c2-raft.pem" || c.Coordinator.RaftInsecure {
		t.Fatalf("cluster config %+v %+v %+v %+v", c.NATS, c.Coordinator, c.Node, c.Aggregator)
	}
	peers, err := ParsePeers(c.Coordinator.Peers)
	if err != nil || len(peers) != 3 || peers[2] != [2]string{"c3", "10.0.0.3:7001"} {
		t.Fatalf("peers %v, %v", peers, err)
	}
	for _, tc := range []struct{ body, want string }{
		{"coordinator:\n  peers: [c1]\n", "want id=host:port"},
		{"coordinator:\n  peers: [c1=a:1, c1=b:2]\n", `id "c1" twice`},
		{"coordinator:\n  raft_addr: nohost\n", "coordinator.raft_addr"},
		{"nats:\n  cert: x.pem\n", "go together"},
		{"coordinator:\n  raft_tls: c1.pem\n  raft_insecure: true\n", "one or the other"},
		{"aggregator:\n  max_proposal_entries: 1000000\n", "aggregator.max_proposal_entries"},
		{"aggregator:\n  in_flight: 0\n", "aggregator.in_flight"},
		{"aggregator:\n  max_pending_entries: 100\n", "aggregator.max_pending_entries"},
		{"node:\n  heartbeat: 1ms\n", "node.heartbeat"},
		{"node:\n  bogus: 1\n", `unknown key "node.bogus"`},
		{"node:\n  me_paired: true\n", "node.me_paired needs node.profileme"},
		{"coordinator:\n  epoch_every: -1h\n", "coordinator.epoch_every = -1h0m0s: want 0 (cut by hand only) or at least 1s"},
		{"coordinator:\n  epoch_every: 500ms\n", "coordinator.epoch_every = 500ms: want 0 (cut by hand only) or at least 1s"},
		{"coordinator:\n  epoch_every: hourly\n", `config: coordinator.epoch_every = "hourly": not a duration (want one such as 90s, 1h or 0)`},
		{"node:\n  heartbeat: soon\n", `config: node.heartbeat = "soon": not a duration`},
		{"coordinator:\n  retention: {full: 2d}\n", `config: coordinator.retention.full = "2d": not a duration`},
		{"coordinator:\n  retention: {keep: -720h}\n", "config: coordinator.retention.keep = -720h0m0s: want 0 (delete nothing) or a positive duration"},
		{"coordinator:\n  retention: {full: 48h, merge_to: 24h, keep: 24h}\n", "config: coordinator.retention.keep = 24h0m0s is shorter than full = 48h0m0s"},
		{"coordinator:\n  retention: {full: 48h}\n", "config: coordinator.retention.merge_to is 0"},
		{"coordinator:\n  epoch_every: 1h\n  retention: {full: 90m, merge_to: 24h}\n", "config: coordinator.retention.full = 1h30m0s: want at least twice coordinator.epoch_every (2h0m0s)"},
		{"coordinator:\n  retention: {fulll: 48h}\n", `unknown key "coordinator.retention.fulll"`},
	} {
		os.WriteFile(file, []byte(tc.body), 0o644)
		_, err := NewLoader().Load(file)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want one mentioning %q", tc.body, err, tc.want)
		}
	}
}

// TestRetentionPolicy: the policy is off by default, read from a file as
// the example writes it, and refused as a whole (nothing loaded) when a
// part is bad (TestClusterConfig's table).
func TestRetentionPolicy(t *testing.T) {
	if c, err := NewLoader().Load(""); err != nil || c.Coordinator.Retention != (Retention{}) {
		t.Fatalf("default retention %+v, %v; want none", c.Coordinator.Retention, err)
	}
	file := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(file, []byte("coordinator:\n  epoch_every: 1h\n  retention: {full: 48h, merge_to: 24h, keep: 720h}\n"), 0o644)
	c, err := NewLoader().Load(file)
	if err != nil || c.Coordinator.Retention != (Retention{Full: 48 * time.Hour, MergeTo: 24 * time.Hour, Keep: 720 * time.Hour}) {
		t.Fatalf("retention %+v, %v", c.Coordinator.Retention, err)
	}
	t.Setenv("DCPI_COORDINATOR_RETENTION_KEEP", "1h")
	if _, err := NewLoader().Load(file); err == nil || !strings.Contains(err.Error(), "coordinator.retention.keep = 1h0m0s is shorter than full") {
		t.Fatalf("keep from the environment under full: %v", err)
	}
}

// TestEpochEveryFromEnvironment: the schedule is off by default and set
// by DCPI_COORDINATOR_EPOCH_EVERY like any key.
func TestEpochEveryFromEnvironment(t *testing.T) {
	if c, err := NewLoader().Load(""); err != nil || c.Coordinator.EpochEvery != 0 {
		t.Fatalf("default epoch_every %v, %v; want 0 (off)", c.Coordinator.EpochEvery, err)
	}
	t.Setenv("DCPI_COORDINATOR_EPOCH_EVERY", "90m")
	if c, err := NewLoader().Load(""); err != nil || c.Coordinator.EpochEvery != 90*time.Minute {
		t.Fatalf("epoch_every %v, %v; want 1h30m from the environment", c.Coordinator.EpochEvery, err)
	}
	t.Setenv("DCPI_COORDINATOR_EPOCH_EVERY", "-1s")
	if _, err := NewLoader().Load(""); err == nil || !strings.Contains(err.Error(), "coordinator.epoch_every = -1s") {
		t.Fatalf("a negative epoch_every from the environment: %v", err)
	}
}

// TestLoadFlags: a flag FlagKeys names overrides its key once set, an
// unset one leaves the default, and a flag no key names is not bound.
func TestLoadFlags(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.Int("cpus", 1, "")
	fs.String("model", "ev5", "")
	fs.Int("unrelated", 0, "")
	if err := fs.Parse([]string{"--cpus", "3", "--unrelated", "9"}); err != nil {
		t.Fatal(err)
	}
	c, err := LoadFlags("", fs, FlagKeys)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sim.CPUs != 3 || c.Sim.Model != Defaults().Sim.Model {
		t.Errorf("sim.cpus %d, sim.model %q; want 3 and the default", c.Sim.CPUs, c.Sim.Model)
	}
	for key, name := range MachineFlagKeys {
		if FlagKeys[key] != name {
			t.Errorf("MachineFlagKeys[%q] = %q, FlagKeys has %q", key, name, FlagKeys[key])
		}
	}
	// A query tool's --host is a list of hosts, not sim.hostname.
	tool := pflag.NewFlagSet("prof", pflag.ContinueOnError)
	tool.StringSlice("host", nil, "")
	if err := tool.Parse([]string{"--host", "alpha1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFlags("", tool, MachineFlagKeys); err != nil {
		t.Errorf("a tool's --host with the machine's keys: %v", err)
	}
}

// TestLabelsAndPerProcess: node.labels and node.per_process come from a
// file, and --label and --per-process replace them.
func TestLabelsAndPerProcess(t *testing.T) {
	file := filepath.Join(t.TempDir(), "node.yaml")
	if err := os.WriteFile(file, []byte("node:\n  labels:\n    service: db\n    zone: eu\n  per_process: [sort, /bin/hashdb]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
	fs.StringToString("label", nil, "")
	fs.StringSlice("per-process", nil, "")
	c, err := LoadFlags(file, fs, FlagKeys)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(c.Node.Labels, map[string]string{"service": "db", "zone": "eu"}) || !slices.Equal(c.Node.PerProcess, []string{"sort", "/bin/hashdb"}) {
		t.Errorf("from the file: labels %v, per_process %v", c.Node.Labels, c.Node.PerProcess)
	}
	if err := fs.Parse([]string{"--label", "service=web", "--per-process", "all"}); err != nil {
		t.Fatal(err)
	}
	if c, err = LoadFlags(file, fs, FlagKeys); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(c.Node.Labels, map[string]string{"service": "web"}) || !slices.Equal(c.Node.PerProcess, []string{"all"}) {
		t.Errorf("with the flags: labels %v, per_process %v", c.Node.Labels, c.Node.PerProcess)
	}
}

// TestProcessLabels: node.process_labels is a list of binaries and their
// labels; entries for one binary merge. A label key comes lowercased, as
// every key of a configuration file does (viper): Role is role.
func TestProcessLabels(t *testing.T) {
	file := filepath.Join(t.TempDir(), "node.yaml")
	body := "node:\n  per_process: [db]\n  process_labels:\n    - binary: db\n      labels: {Role: primary, shard: \"7\"}\n    - binary: /usr/bin/web.v2\n      labels: {tier: front}\n    - binary: db\n      labels: {shard: \"8\"}\n"
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := NewLoader().Load(file)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Node.ProcessLabelMap()
	want := map[string]map[string]string{"db": {"role": "primary", "shard": "8"}, "/usr/bin/web.v2": {"tier": "front"}}
	if len(got) != len(want) || !maps.Equal(got["db"], want["db"]) || !maps.Equal(got["/usr/bin/web.v2"], want["/usr/bin/web.v2"]) {
		t.Errorf("ProcessLabelMap = %v, want %v", got, want)
	}
}

// TestEnrollment: an enrollment file (as dcpi enroll install writes it)
// sets the host's identity and way to the cluster over the file's; it
// may set nothing else; flags still win.
func TestEnrollment(t *testing.T) {
	dir := t.TempDir()
	enr := filepath.Join(dir, "enrollment.yaml")
	os.WriteFile(enr, []byte(`# written by dcpi enroll install
nats: {"urls":["tls://nats.example:4222"],"creds":"/etc/dcpi/host.nk","ca":"/etc/dcpi/ca.pem"}
sim: {"hostname":"alpha7"}
node: {"labels":{"rack":"r2"}}
`), 0o600)
	file := filepath.Join(dir, "node.yaml")
	os.WriteFile(file, []byte("enrollment: "+enr+"\nsim: {hostname: alpha0, cpus: 2}\nnode:\n  mix: default\n  labels: {service: db, rack: r1}\n"), 0o644)
	c, err := NewLoader().Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sim.Hostname != "alpha7" || c.Sim.CPUs != 2 || len(c.NATS.URLs) != 1 || c.NATS.URLs[0] != "tls://nats.example:4222" ||
		c.NATS.Creds != "/etc/dcpi/host.nk" || c.NATS.CA != "/etc/dcpi/ca.pem" || c.Node.Labels["rack"] != "r2" || c.Node.Labels["service"] != "db" {
		t.Fatalf("%+v %+v %+v", c.Sim, c.NATS, c.Node.Labels)
	}
	os.WriteFile(enr, []byte("node: {mix: other}\n"), 0o600)
	if _, err := NewLoader().Load(file); err == nil || !strings.Contains(err.Error(), "node.mix") {
		t.Errorf("an enrollment setting node.mix: %v", err)
	}
	os.Remove(enr)
	if _, err := NewLoader().Load(file); err == nil {
		t.Error("a missing enrollment loaded")
	}
}
