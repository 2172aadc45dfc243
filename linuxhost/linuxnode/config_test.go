package linuxnode

import (
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"dcpi/config"
	"dcpi/linuxhost"
	"dcpi/profiledb"
	"dcpi/simhost"
	"dcpi/transport"
	"dcpi/wire"
)

func testConfig() Config {
	cfg := config.Defaults()
	cfg.Sim.Hostname = "linux0"
	cfg.NATS.URLs = []string{"nats://127.0.0.1:4222"}
	cfg.Node.Labels = map[string]string{"rack": "r1"}
	return Config{Config: cfg}
}

// TestConfigRefuses: what a Linux host cannot do is refused naming the
// setting, before any event is opened.
func TestConfigRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(c *Config)
		want string
	}{
		{"profileme", func(c *Config) { c.Config.Node.ProfileMe = true }, "node.profileme"},
		{"values", func(c *Config) { c.Config.Node.Values = "loadlat" }, "node.values"},
		{"event", func(c *Config) { c.Event = "imiss" }, "unknown event"},
		{"host", func(c *Config) { c.Config.Sim.Hostname = "a.b" }, "host"},
		{"label", func(c *Config) { c.Labels = map[string]string{"machine": "x"} }, "--label"},
		{"seconds", func(c *Config) { c.Config.Node.Seconds = -1 }, "node.seconds"},
		{"per-process", func(c *Config) { c.Config.Node.PerProcess = []string{""} }, ""},
		{"programs", func(c *Config) { c.Programs = []string{"./my", "1"} }, "start ./my yourself"},
		{"nats", func(c *Config) { c.Config.NATS.URLs = nil }, "--nats URL"},
	} {
		c := testConfig()
		tc.set(&c)
		err := c.check()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	if err := testConfig().check(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}

// TestRegistration: the host registers its labels with the machine kind,
// and a sample stands for 1/freq s of a CPU in ns, under the event's
// number.
func TestRegistration(t *testing.T) {
	c := testConfig()
	want := map[string]string{"rack": "r1", profiledb.MachineLabel: linuxhost.Machine()}
	if got := c.labels(); !maps.Equal(got, want) {
		t.Errorf("labels %v, want %v", got, want)
	}
	if c.Config.Node.Labels[profiledb.MachineLabel] != "" {
		t.Error("the configuration's labels were changed")
	}
	c.Labels = map[string]string{"zone": "z"}
	if got := c.labels(); got["zone"] != "z" || got["rack"] != "" {
		t.Errorf("--label replaces node.labels: %v", got)
	}
	if p := c.periods(); !maps.Equal(p, map[uint8]uint64{0: uint64(time.Second) / defaultFreq}) {
		t.Errorf("periods %v", p)
	}
	c.Event, c.Freq = "instructions", 100
	if p := c.periods(); !maps.Equal(p, map[uint8]uint64{1: 10_000_000}) {
		t.Errorf("instructions at 100/s: periods %v", p)
	}
	if h := c.hostConfig(); h.PID != -1 || h.Event != "instructions" || h.Freq != 100 || h.EnableOnExec || h.UserStack != 0 {
		t.Errorf("host %+v: want every process (PID -1), enabled at once, no stack copies", h)
	}
	c.Config.Node.Stacks = true
	if h := c.hostConfig(); h.UserStack != linuxhost.DefaultUserStack {
		t.Errorf("with stacks: host %+v, want user stacks copied", h)
	}
}

// TestNodeConfig: the node resumes its streams where the cluster says,
// in the fleet's epoch, with the kernel's addresses above
// linuxhost.KernelBase and the publish window in the host's ns.
func TestNodeConfig(t *testing.T) {
	c := testConfig()
	c.Config.Node.Stacks, c.Config.Node.PublishEvery = true, 0.5
	c.Config.Node.PerProcess = []string{"db"}
	rp := simhost.ResumePoint{First: []uint64{4, 9}, Carried: []map[string]uint64{{wire.DropCrashLost: 3}, nil}}
	n := c.nodeConfig(7, rp)
	switch {
	case n.Host != "linux0" || n.Epoch != 7 || n.KernelBase != linuxhost.KernelBase:
		t.Errorf("host %s, epoch %d, kernel base %#x", n.Host, n.Epoch, n.KernelBase)
	case n.FirstSeq[1] != 9 || n.Carried[0][wire.DropCrashLost] != 3:
		t.Errorf("resume %v %v", n.FirstSeq, n.Carried)
	case n.PublishEvery != 500_000_000:
		t.Errorf("publish window %d ns, want 0.5 s", n.PublishEvery)
	case n.Driver.Stacks.Entries == 0 || len(n.PerProcess) != 1:
		t.Errorf("stacks %+v, per process %v", n.Driver.Stacks, n.PerProcess)
	}
	if c.maxUpload() != defaultMaxUpload {
		t.Errorf("default upload cap %d", c.maxUpload())
	}
	c.MaxUpload = -1
	if c.maxUpload() != 0 {
		t.Errorf("uploads off: cap %d", c.maxUpload())
	}
}

// TestHostName: left at the simulated default, the host is named after
// this machine; a name given is kept.
func TestHostName(t *testing.T) {
	c := testConfig()
	if got := c.withHostName().Config.Sim.Hostname; got != "linux0" {
		t.Errorf("a given name became %q", got)
	}
	c.Config.Sim.Hostname = config.Defaults().Sim.Hostname
	want, _ := os.Hostname()
	want = strings.ReplaceAll(want, ".", "-")
	if got := c.withHostName().Config.Sim.Hostname; got != want {
		t.Errorf("the default name became %q, want %q", got, want)
	}
}

// TestWantsUpload: files on the machine are uploaded; the kernel and
// pseudo-paths are not.
func TestWantsUpload(t *testing.T) {
	for path, want := range map[string]bool{"/usr/lib/libc.so.6": true, linuxhost.KernelPath: false, "[vdso]": false, "": false} {
		if got := wantsUpload(&wire.ImageRecord{Path: path}); got != want {
			t.Errorf("%q: %v, want %v", path, got, want)
		}
	}
}

// TestReportLine: the report says what the kernel generated, what was
// lost in the rings under its drop counter's name, and what was
// published.
func TestReportLine(t *testing.T) {
	r := Report{Host: "linux0", Counts: linuxhost.Counts{Generated: 10, Delivered: 8, Lost: 2}, Epochs: 1}
	r.Published.SamplesPublished = 8
	s := r.String()
	for _, want := range []string{"10 samples generated by the kernel", "2 lost in its rings as " + wire.DropRingLost, "8 published", "1 epoch cuts"} {
		if !strings.Contains(s, want) {
			t.Errorf("report %q does not say %q", s, want)
		}
	}
}

// bigKernel is a kernel image of n symbols.
func bigKernel(n int) *linuxhost.Kernel {
	k := &linuxhost.Kernel{Base: linuxhost.KernelBase, Size: uint64(n) * 16, ID: "sha256:" + strings.Repeat("ab", 32)}
	for i := range n {
		k.Symbols = append(k.Symbols, wire.Symbol{Name: fmt.Sprintf("kernel_function_%06d", i), Addr: k.Base + uint64(i)*16, Size: 16})
	}
	return k
}

// TestRecordsFitAProposal: a kernel whose image record a proposal over
// the cluster's NATS cannot carry is refused, saying what to raise; any
// other image's record too large loses its symbols rather than stall the
// host's streams.
func TestRecordsFitAProposal(t *testing.T) {
	k := bigKernel(100_000) // about 3 MB encoded, as a real kernel's
	if err := checkKernelFits(k, transport.DefaultMaxPayload); err != nil {
		t.Errorf("8 MiB: %v", err)
	}
	err := checkKernelFits(k, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "raise the server's max_payload to 8388608") {
		t.Errorf("1 MiB: %v", err)
	}
	r, err := kernelRecord(k)
	if err != nil {
		t.Fatal(err)
	}
	fit, stripped, err := fitRecord(r, 1<<20)
	if err != nil || !stripped || len(fit.Symbols) != 0 || fit.Key != r.Key || fit.Base != r.Base || len(r.Symbols) != 100_000 {
		t.Errorf("1 MiB: stripped %v, %d symbols (the original's %d), %v", stripped, len(fit.Symbols), len(r.Symbols), err)
	}
	if fit, stripped, err := fitRecord(r, transport.DefaultMaxPayload); err != nil || stripped || fit != r {
		t.Errorf("8 MiB: stripped %v, %v", stripped, err)
	}
}
