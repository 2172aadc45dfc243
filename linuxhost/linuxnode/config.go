// Package linuxnode is dcpi node --linux: this whole Linux machine
// (every CPU, every process: perf_event_open system-wide, PID -1,
// through package linuxhost) as a host of a dcpi cluster beside
// simulated ones. The host joins as a simulated host does
// (cluster.StartHost): on its own NKey credentials it asks the
// coordinator where its batch streams resume, publishes batches on its
// own subjects through a transport.Publisher (bounded, with the
// end-to-end acknowledgment of node.retain_mb), follows the
// coordinator's epoch cuts and acknowledges them (node.Follow), sends its
// process records, and uploads the files of the images it sampled by
// content key, so dcpi list and pprof read them on any machine. Its
// registry entry carries the configured labels and the machine kind
// (profiledb.MachineLabel, "linux-amd64"), which dcpi calc, me, values
// and pp fleet refuse.
//
// config.go is the pure part (the configuration into the node's, the
// registration, the report); node.go runs it (events, sockets,
// goroutines).
package linuxnode

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"dcpi/cluster"
	"dcpi/config"
	"dcpi/linuxhost"
	"dcpi/node"
	"dcpi/profiledb"
	"dcpi/simhost"
	"dcpi/transport"
	"dcpi/wire"
)

// Config is one Linux host of a cluster.
type Config struct {
	// Config is the process's configuration: nats (the cluster and the
	// host's credentials), sim.hostname (the host's name; left at the
	// simulated default alpha0, this machine's name) and node (its
	// labels, stacks, per-process images, process labels, publish
	// window, heartbeat, buffers). node.seconds and node.flush_every are
	// wall-clock seconds here.
	Config config.Config
	// Event is what each CPU samples (linuxhost.Events; "": cpu-clock)
	// and Freq how often, per second per CPU (0: 999).
	Event string
	Freq  uint64
	// Labels, when set, replace the configuration's node.labels.
	Labels map[string]string
	// Programs are programs the command line named: a Linux host runs
	// none (it profiles whatever runs), so any is an error.
	Programs []string
	// RingPages and Poll are the host's rings and how often they are
	// read (linuxhost.Config; 0: its defaults).
	RingPages int
	Poll      time.Duration
	// MaxUpload bounds the files of sampled images the host uploads
	// (0: 64 MiB; negative: none are).
	MaxUpload int64
	Telemetry *cluster.Telemetry
	Logger    *slog.Logger
	// Out receives the role's report.
	Out io.Writer
}

// withHostName is c with the host named after this machine (its dots
// as dashes, as dcpi profile --linux names it) when the configuration
// left sim.hostname at the simulated host's default.
func (c Config) withHostName() Config {
	if c.Config.Sim.Hostname == config.Defaults().Sim.Hostname {
		if name, err := os.Hostname(); err == nil && name != "" {
			c.Config.Sim.Hostname = strings.ReplaceAll(name, ".", "-")
		}
	}
	return c
}

// defaultFreq is the rate when Config.Freq is 0 (linuxhost's default).
const defaultFreq = 999

// defaultMaxUpload bounds an image file the host uploads: bigger ones
// (a large binary's debug information) stay on the machine, where dcpi
// list --image-dir finds them.
const defaultMaxUpload = 64 << 20

func (c Config) maxUpload() int64 {
	if c.MaxUpload == 0 {
		return defaultMaxUpload
	}
	return max(c.MaxUpload, 0)
}

// check refuses what a Linux host cannot do, naming the setting.
func (c Config) check() error {
	n := c.Config.Node
	switch {
	case len(c.Programs) > 0:
		return fmt.Errorf("--linux profiles every process on this machine and runs none: start %s yourself (dcpi profile --linux -- %s profiles one command into a local database)", c.Programs[0], strings.Join(c.Programs, " "))
	case len(c.Config.NATS.URLs) == 0:
		return errors.New("--linux joins a cluster: give --nats URL (or nats.urls, or an enrollment; docs/linux.md); dcpi profile --linux profiles one command into a local database")
	case n.ProfileMe || n.MePaired:
		return errors.New("--linux: ProfileMe (node.profileme, node.me_paired) is simulated Alpha hardware; a Linux host samples with perf_event_open only")
	case n.Values != "":
		return errors.New("--linux: value sampling (node.values) interprets simulated Alpha instructions; a Linux host cannot")
	case n.Seconds < 0 || n.FlushEvery < 0 || n.PublishEvery < 0:
		return fmt.Errorf("--linux: node.seconds %v, node.flush_every %v, node.publish_every %v: want 0 or more", n.Seconds, n.FlushEvery, n.PublishEvery)
	}
	if err := transport.CheckHost(c.Config.Sim.Hostname); err != nil {
		return err
	}
	if _, err := linuxhost.LookupEvent(c.event()); err != nil {
		return err
	}
	if err := wire.CheckLabels(c.userLabels()); err != nil {
		return fmt.Errorf("--label: %w", err)
	}
	if err := node.CheckPerProcess(n.PerProcess); err != nil {
		return err
	}
	if n.PerThread {
		// perf's samples carry the TID, but no thread incarnation: a
		// per-thread node would count every thread as its process's first.
		return errors.New("node.per_thread: a Linux host does not tell threads apart (simulated hosts only)")
	}
	return node.CheckProcessLabels(n.ProcessLabelMap())
}

func (c Config) event() string {
	if c.Event == "" {
		return "cpu-clock"
	}
	return c.Event
}

func (c Config) freq() uint64 {
	if c.Freq == 0 {
		return defaultFreq
	}
	return c.Freq
}

func (c Config) userLabels() map[string]string {
	if len(c.Labels) > 0 {
		return c.Labels
	}
	return c.Config.Node.Labels
}

// hostConfig is the machine's events: system-wide, with copies of the
// user stacks when stacks are wanted.
func (c Config) hostConfig() linuxhost.Config {
	h := linuxhost.Config{Event: c.event(), Freq: c.freq(), PID: -1, RingPages: c.RingPages, Poll: c.Poll}
	if c.Config.Node.Stacks {
		// Stacks walked with .eh_frame from copies of the user stack:
		// right for the distribution's code, built without frame pointers.
		h.UserStack = linuxhost.DefaultUserStack
	}
	return h
}

// labels are the host's registry labels: the user's and the machine kind.
func (c Config) labels() map[string]string {
	l := maps.Clone(c.userLabels())
	if l == nil {
		l = map[string]string{}
	}
	l[profiledb.MachineLabel] = linuxhost.Machine()
	return l
}

// periods are the host's events per sample for its registration: a
// sample stands for 1/freq s of a CPU, in ns (the clock events' unit), as
// dcpi profile --linux records it.
func (c Config) periods() map[uint8]uint64 {
	ev, _ := linuxhost.LookupEvent(c.event())
	return map[uint8]uint64{ev.Alpha: uint64(time.Second) / c.freq()}
}

// seconds turns a configured number of seconds into a duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// flushEvery is the wall time between full drains (node.flush_every; 0:
// none but the publish window's and the epochs').
func (c Config) flushEvery() time.Duration { return seconds(c.Config.Node.FlushEvery) }

// nodeConfig is the node's configuration in epoch, its streams resuming
// at rp. The host's cycles are nanoseconds
// (linuxhost.Host.Now), so the publish window is in ns.
func (c Config) nodeConfig(epoch uint64, rp simhost.ResumePoint) node.Config {
	n := c.Config.Node
	ncfg := node.DefaultConfig()
	ncfg.Host, ncfg.Epoch, ncfg.KernelBase = c.Config.Sim.Hostname, epoch, linuxhost.KernelBase
	ncfg.FirstSeq, ncfg.Carried = rp.First, rp.Carried
	ncfg.PublishEvery = uint64(seconds(n.PublishEvery))
	ncfg.PerProcess, ncfg.ProcessLabels = n.PerProcess, n.ProcessLabelMap()
	if n.Stacks {
		ncfg.Driver.Stacks = node.DefaultStackConfig()
	}
	return ncfg
}

// requestRoom is what a proposal to the coordinator keeps of NATS's
// payload limit for itself (coordinator.Client.Propose's 64 KiB, and the
// command's counts and a part's framing), so an image record of at most
// maxPayload - requestRoom bytes can be proposed.
const requestRoom = 64<<10 + 1<<10

// recordLimit is the largest image record a proposal carries over a NATS
// server of maxPayload bytes a message.
func recordLimit(maxPayload int64) int { return int(maxPayload) - requestRoom }

// kernelRecord is the kernel's image record as the node publishes it.
func kernelRecord(k *linuxhost.Kernel) (*wire.ImageRecord, error) {
	key, err := wire.ParseImageKey(k.ID)
	if err != nil {
		return nil, err
	}
	f := k.Facts()
	return &wire.ImageRecord{Version: wire.StackVersion, Key: key, Path: linuxhost.KernelPath, Base: *f.LinkBase,
		TextStart: f.TextStart, TextEnd: f.TextEnd, Symbols: f.Symbols}, nil
}

// checkKernelFits refuses a cluster whose NATS messages cannot carry
// the kernel's image record (every sample in the kernel names it, and
// the aggregator proposes it with them): its samples could never be
// stored.
func checkKernelFits(k *linuxhost.Kernel, maxPayload int64) error {
	r, err := kernelRecord(k)
	if err != nil {
		return err
	}
	b, err := r.MarshalBinary()
	if err != nil {
		return err
	}
	if len(b) > recordLimit(maxPayload) {
		return fmt.Errorf("the kernel's image record (%d symbols from /proc/kallsyms) encodes to %d bytes, more than a proposal over this NATS server can carry (max_payload %d bytes, of which %d for the record): its samples could never be stored; raise the server's max_payload to %d (dcpi nats-server's default)",
			len(r.Symbols), len(b), maxPayload, recordLimit(maxPayload), transport.DefaultMaxPayload)
	}
	return nil
}

// fitRecord is r as a proposal over a NATS server of maxPayload bytes a
// message can carry it: r, or when its encoding is larger, a copy
// without its symbols (its samples are then stored under the image, as
// unknown_rtn, rather than never). stripped says which.
func fitRecord(r *wire.ImageRecord, maxPayload int64) (_ *wire.ImageRecord, stripped bool, _ error) {
	b, err := r.MarshalBinary()
	if err != nil || len(b) <= recordLimit(maxPayload) {
		return r, false, err
	}
	c := *r
	c.Symbols = nil
	return &c, true, nil
}

// Report is what a Linux host did in its run: what the kernel's rings
// held (Counts: every sample delivered to the driver or lost in a ring)
// and what the publisher sent.
type Report struct {
	Host      string
	Counts    linuxhost.Counts
	Published transport.PublisherStats
	// Epochs counts the epoch cuts the host followed.
	Epochs uint64
	// Resumed is what the host found of an earlier run under its name.
	Resumed simhost.ResumePoint
	// Uploads count the image files sent for the analysis tools.
	Uploads UploadStats
	// Daemon is what the node's daemon did (batches, image and process
	// records).
	Daemon node.DaemonStats
}

// String is the report's line, as a simulated node's: what the kernel
// generated, and what was published and counted as dropped.
func (r Report) String() string {
	var b strings.Builder
	if r.Resumed.Lost > 0 {
		fmt.Fprintf(&b, "host %s: resuming after a previous run: %d of its samples lost with it (%s)\n", r.Host, r.Resumed.Lost, wire.DropCrashLost)
	}
	drops := make([]string, 0, len(r.Published.Drops))
	for _, k := range slices.Sorted(maps.Keys(r.Published.Drops)) {
		drops = append(drops, fmt.Sprintf("%s %d", k, r.Published.Drops[k]))
	}
	fmt.Fprintf(&b, "host %s: %d samples generated by the kernel (%d delivered to the driver, %d lost in its rings as %s); %d published in batches over %d epoch cuts, transport drops [%s]",
		r.Host, r.Counts.Generated, r.Counts.Delivered, r.Counts.Lost, wire.DropRingLost, r.Published.SamplesPublished, r.Epochs, strings.Join(drops, ", "))
	fmt.Fprintf(&b, "\nhost %s: %s", r.Host, r.Uploads)
	return b.String()
}
