package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"dcpi/cluster"
	"dcpi/config"
	"dcpi/coordinator"
	"dcpi/internal/svgchart"
	"dcpi/loadgen"
	"dcpi/storage"
	"dcpi/transport"
	"dcpi/transport/auth"
	"dcpi/wire"
)

type loadOptions struct {
	recording   string
	hosts       int
	seconds     float64
	natsURLs    []string
	dir         string
	aggregators int
	conns       int
	prefix      string
	bufferKB    int
	endToEnd    bool
	hostKeys    bool
	heartbeat   time.Duration
	cutEvery    time.Duration
	findKnee    bool
	maxHosts    int
	asJSON      bool
	drain       time.Duration
}

func newLoadgenRunCommand() *cobra.Command {
	var o loadOptions
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Replay a recording as N hosts against a cluster and measure what it sustains",
		Long: `Replay --recording as --hosts agents for --seconds of wall time, each at
the recorded host's real rate (a recorded simulated second is replayed
in one second), with its own host name (PREFIX0000, PREFIX0001, ...),
its own sequence numbers and the cluster's open epoch, publishing its
batches and image records through the transport's publisher like a
node agent. The recording loops if --seconds is longer. With
--host-keys (the default) each agent also registers, heartbeats and
follows epoch cuts as a node does: its batches after a cut carry the new
epoch, and it acknowledges the one it left (at batch granularity: a
recorded window cannot be split at the cut as a node's drain splits
it). --cut-every cuts an epoch that often during the load and reports
how long each took to seal.

Without --nats it starts a cluster of child processes under --dir: dcpi
nats-server, three coordinator replicas and --aggregators aggregators.
With --nats it loads that cluster (choose a --prefix no host there has)
and measures only itself.

When the load stops it waits for the agents' publishers to empty and the
cluster to store everything, then reports: generated and stored samples
per second, whether conservation holds exactly (the cluster's stored +
unknown + dropped samples of the agents' hosts equal what the agents
published, counted from the batches), the delay from publish to
queryable (polling dcpi totals: the time until the stored total reached
what had been published at an earlier poll), and each role's CPU (cores:
CPU seconds over the load's wall seconds) and peak RSS. A run is
"sustained" when conservation holds, the stored rate kept up with the
generated rate (>= 95% over the second half of the load) and the delay
stayed under 10 s (and, with --cut-every, every epoch cut was sealed).

--find-knee runs the load again on a fresh cluster for each host count,
doubling from --hosts until a run is not sustained, then halving the gap
three times, and prints each run and the largest sustained count.`,
		Example: `  dcpi loadgen run --recording /tmp/host.dcpiload --hosts 16 --seconds 20
  dcpi loadgen run --recording /tmp/host.dcpiload --find-knee --hosts 8 --seconds 30
  dcpi loadgen run --recording /tmp/host.dcpiload --hosts 4 --nats nats://127.0.0.1:4222 --prefix lgb`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.recording == "" {
				return errors.New("--recording: name a file dcpi loadgen record wrote")
			}
			data, err := os.ReadFile(o.recording)
			if err != nil {
				return err
			}
			rec, err := loadgen.Decode(data)
			if err != nil {
				return fmt.Errorf("%s: %w", o.recording, err)
			}
			if o.hosts < 1 || o.hosts > 100_000 || o.seconds <= 0 || o.conns < 1 || o.aggregators < 1 || o.bufferKB < 1 || o.heartbeat <= 0 {
				return fmt.Errorf("want --hosts 1-100000, --seconds > 0, --conns >= 1, --aggregators >= 1, --buffer-kb >= 1, --heartbeat > 0")
			}
			if o.cutEvery < 0 || (o.cutEvery > 0 && !o.hostKeys) {
				return errors.New("--cut-every: want >= 0, and --host-keys (only agents that heartbeat follow epochs)")
			}
			if err := wire.CheckHost(o.prefix + "0"); err != nil {
				return fmt.Errorf("--prefix %q: %w", o.prefix, err)
			}
			if len(o.natsURLs) > 0 && o.findKnee {
				return errors.New("--find-knee starts a fresh cluster for each run: not with --nats")
			}
			if len(o.natsURLs) > 0 {
				o.natsURLs = natsConfig(cmd, o.natsURLs).URLs
			}
			if o.dir == "" {
				d, err := os.MkdirTemp("", "dcpi-loadgen-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				o.dir = d
			}
			w := cmd.OutOrStdout()
			h := rec.Header
			secs := float64(h.Cycles) / float64(h.ClockHz)
			fmt.Fprintf(w, "loadgen: recording %s: %s, %d CPUs, %g s, %.0f samples/s per CPU, drain every %g s, publish window %g s\n", o.recording, h.Host, h.CPUs, secs,
				float64(h.Generated)/secs/float64(h.CPUs), float64(h.FlushEvery)/float64(h.ClockHz), float64(h.PublishEvery)/float64(h.ClockHz))
			if !o.findKnee {
				r, err := runLoadStep(cmd.Context(), cmd, rec, o, o.hosts, o.dir)
				if err != nil {
					return err
				}
				return printLoad(w, r, o.asJSON)
			}
			return findKnee(cmd.Context(), cmd, w, rec, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.recording, "recording", "", "recording file (dcpi loadgen record --out)")
	f.IntVar(&o.hosts, "hosts", 8, "agents to replay (with --find-knee, the first count tried)")
	f.Float64Var(&o.seconds, "seconds", 30, "wall seconds of load")
	f.StringSliceVar(&o.natsURLs, "nats", nil, "load this cluster instead of starting one")
	f.StringVar(&o.dir, "dir", "", "directory of the started cluster's data and logs (default: a temporary one, removed)")
	f.IntVar(&o.aggregators, "aggregators", 2, "aggregators of the started cluster")
	f.IntVar(&o.conns, "conns", 8, "NATS connections the agents share")
	f.StringVar(&o.prefix, "prefix", "lg", "host name prefix of the agents")
	f.IntVar(&o.bufferKB, "buffer-kb", 2048, "each agent's publisher queue bound (KiB); past it batches become tombstones (dropped, counted)")
	f.BoolVar(&o.endToEnd, "end-to-end-ack", true, "each agent keeps its batches until the coordinator reports them applied, asking once a poll for all its streams, as a node does by default (node.retain_mb; docs/durability.md)")
	f.BoolVar(&o.hostKeys, "host-keys", true, "each agent has its own connection, on its own host's key when the server has credentials (issued now on this machine's server store), and registers and heartbeats as a node does; false: the agents share --conns connections on the coordinator's key and send no heartbeats")
	f.DurationVar(&o.cutEvery, "cut-every", 0, "cut an epoch this often during the load (as dcpi epoch cut) and measure each one's time to seal; 0: none; needs --host-keys")
	f.DurationVar(&o.heartbeat, "heartbeat", config.Defaults().Node.Heartbeat, "each agent's heartbeat interval, with --host-keys (node.heartbeat)")
	f.BoolVar(&o.findKnee, "find-knee", false, "sweep host counts for the largest sustained one")
	f.IntVar(&o.maxHosts, "max-hosts", 4096, "largest host count --find-knee tries")
	f.DurationVar(&o.drain, "drain-timeout", 3*time.Minute, "longest wait for the cluster to store everything after the load")
	f.BoolVar(&o.asJSON, "json", false, "print the result as JSON")
	return cmd
}

// loadPoint is one poll during a run: seconds since the load began,
// samples the agents had published (handed to their publishers) and the
// cluster held.
type loadPoint struct {
	t                 float64
	published, stored uint64
}

// roleUse is one role's CPU and memory over a run.
type roleUse struct {
	Role    string  `json:"role"`
	Cores   float64 `json:"cores"`    // CPU seconds / wall seconds of the load
	PeakRSS uint64  `json:"peak_rss"` // bytes
}

// loadResult is one run's report.
type loadResult struct {
	Hosts          int       `json:"hosts"`
	Seconds        float64   `json:"seconds"`
	Generated      uint64    `json:"generated"` // samples and drops in the published batches
	Stored         uint64    `json:"stored"`    // the cluster's stored + unknown + dropped, after the drain
	Drops          uint64    `json:"drops"`     // of which drop counters
	Batches        uint64    `json:"batches"`
	GeneratedRate  float64   `json:"generated_per_s"`
	StoredRate     float64   `json:"stored_per_s"`         // over the load
	LateGenRate    float64   `json:"late_generated_per_s"` // second half of the load
	LateStoredRate float64   `json:"late_stored_per_s"`
	DrainSeconds   float64   `json:"drain_seconds"` // after the load, until stored = generated
	Conserved      bool      `json:"conserved"`
	DelayP50       float64   `json:"delay_p50_s"`
	DelayMax       float64   `json:"delay_max_s"`
	Sustained      bool      `json:"sustained"`
	HostKeys       bool      `json:"host_keys"`          // each agent on its own host's key and connection
	Heartbeats     uint64    `json:"heartbeats"`         // answered, over the load and the drain
	HeartbeatFails uint64    `json:"heartbeat_failures"` // not answered within the interval
	AppliedErrors  uint64    `json:"applied_errors"`     // the agents' applied polls that failed
	Republished    uint64    `json:"republished"`        // batches the agents sent again (a stream stalled)
	Cuts           int       `json:"cuts"`               // epochs cut during the load (--cut-every)
	CutFailures    int       `json:"cut_failures"`       // cuts that failed
	Sealed         int       `json:"sealed"`             // of the cut epochs, sealed by the end of the run
	SealP50        float64   `json:"seal_p50_s"`         // from cut to seen sealed (polled each second)
	SealMax        float64   `json:"seal_max_s"`
	AgentCuts      uint64    `json:"agent_cuts"`   // agents that moved to a later epoch
	Acks           uint64    `json:"acks"`         // acknowledgements delivered
	AckFailures    uint64    `json:"ack_failures"` // acknowledgements that failed (sent again)
	Roles          []roleUse `json:"roles"`
}

// runLoadStep runs one load of n hosts, on a cluster it starts under dir
// unless o.natsURLs names one.
func runLoadStep(ctx context.Context, cmd *cobra.Command, rec *loadgen.Recording, o loadOptions, n int, dir string) (loadResult, error) {
	res := loadResult{Hosts: n, Seconds: o.seconds}
	var cl *cluster.Processes
	urls := o.natsURLs
	if len(urls) == 0 {
		var err error
		if cl, err = startProcesses(dir, o.aggregators); err != nil {
			return res, err
		}
		defer cl.Stop()
		urls = []string{cl.URL()}
	}
	ncfg := natsConfig(cmd, urls)
	ncfg.URLs = urls
	logf := stderrLog("loadgen: ")
	qc, err := connectTool(ncfg, auth.Query, "loadgen-query")
	if err != nil {
		return res, err
	}
	defer qc.Close()
	coord := coordinator.NewClient(qc)
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("%s%04d", o.prefix, i)
	}
	q := storage.Query{Hosts: hosts}
	if cl != nil {
		q = storage.Query{} // a fresh cluster holds the agents' hosts only
	}
	held := func() (uint64, error) {
		c, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		t, err := coord.Totals(c, q)
		if err != nil {
			return 0, err
		}
		s := t.Samples + t.Unknown
		for _, d := range t.Drops {
			s += d
		}
		return s, nil
	}
	// The cluster answers once a leader serves; its open epoch is the
	// newest.
	epoch := uint64(1)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		eps, err := coord.Epochs(c)
		cancel()
		if err == nil {
			for _, e := range eps {
				epoch = max(epoch, e.Number)
			}
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("loadgen: the cluster does not answer: %w", err)
		}
	}
	base, err := held()
	if err != nil {
		return res, err
	}
	if base != 0 {
		return res, fmt.Errorf("loadgen: the cluster already holds %d samples of hosts %s...: choose another --prefix", base, hosts[0])
	}

	agentConns, closeConns, err := connectAgents(ncfg, hosts, o, logf)
	if err != nil {
		return res, err
	}
	defer closeConns()
	coords := make([]*coordinator.Client, len(agentConns))
	for i, c := range agentConns {
		coords[i] = coordinator.NewClient(c)
	}
	conn := func(i int) int { return i % len(agentConns) }
	coordOf := func(i int) *coordinator.Client { return coords[conn(i)] }
	window := time.Duration(float64(max(rec.Header.FlushEvery, rec.Header.PublishEvery)) / float64(rec.Header.ClockHz) * float64(time.Second))
	agents := make([]*loadgen.Agent, n)
	pubs := make([]*transport.Publisher, n)
	for i, h := range hosts {
		if agents[i], err = loadgen.NewAgent(rec, h, epoch); err != nil {
			return res, err
		}
		pcfg := transport.PublisherConfig{Host: h, MaxBufferedBytes: o.bufferKB << 10, Logf: logf}
		if o.endToEnd {
			coord := coordOf(i)
			pcfg.Applied = func(ctx context.Context, cpus []uint16) ([]uint64, error) {
				return coord.AppliedStreams(ctx, h, cpus)
			}
			pcfg.AppliedPoll = transport.AppliedPollFor(window, 0)
		}
		if pubs[i], err = transport.NewPublisher(agentConns[conn(i)], pcfg); err != nil {
			return res, err
		}
	}

	res.HostKeys = o.hostKeys
	control := agentControl{agents: agents}
	ctrlCtx, stopControl := context.WithCancel(ctx)
	defer func() { stopControl(); control.wg.Wait() }()
	if o.hostKeys {
		if err := registerAgents(ctx, hosts, coordOf, int(rec.Header.CPUs)); err != nil {
			return res, err
		}
		control.start(ctrlCtx, hosts, coordOf, o.heartbeat)
	}

	// The load: each agent publishes its items when they are due, the
	// agents' starts spread over one drain interval, or one publish
	// window if the recorded daemon had one (hosts' windows are not
	// synchronized: a fleet's batches arrive spread over the window).
	var generated, batches atomic.Uint64
	var pubErr error
	var errOnce sync.Once
	clock := float64(rec.Header.ClockHz)
	flush := time.Duration(float64(max(rec.Header.FlushEvery, rec.Header.PublishEvery)) / clock * float64(time.Second))
	length := time.Duration(o.seconds * float64(time.Second))
	before := cl.Usage()
	start := time.Now()
	var cuts *epochCutter
	if o.cutEvery > 0 {
		if cuts, err = startEpochCutter(ctrlCtx, ncfg, start, o.cutEvery, length); err != nil {
			return res, err
		}
	}
	var wg sync.WaitGroup
	for i, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			offset := flush * time.Duration(i) / time.Duration(n)
			var b wire.Batch
			for loop := uint64(0); ; loop++ {
				for j := range a.Len() {
					due := offset + time.Duration(float64(a.At(loop, j))/clock*float64(time.Second))
					if due >= length {
						return
					}
					if d := time.Until(start.Add(due)); d > 0 {
						select {
						case <-time.After(d):
						case <-ctx.Done():
							return
						}
					}
					var err error
					if a.Batch(loop, j, &b) {
						if err = pubs[i].PublishBatch(&b); err == nil {
							generated.Add(loadgen.Samples(&b))
							batches.Add(1)
						}
					} else {
						err = pubs[i].PublishImage(a.Image(j))
					}
					if err != nil {
						errOnce.Do(func() { pubErr = err })
						return
					}
				}
			}
		}()
	}
	var series []loadPoint
	poll := func() {
		p := loadPoint{t: time.Since(start).Seconds(), published: generated.Load()}
		if s, err := held(); err == nil {
			p.stored = s
		} else if len(series) > 0 {
			p.stored = series[len(series)-1].stored
		}
		series = append(series, p)
	}
	loadDone := make(chan struct{})
	go func() { wg.Wait(); close(loadDone) }()
	tick := time.NewTicker(time.Second)
polling:
	for {
		select {
		case <-tick.C:
			poll()
		case <-loadDone:
			break polling
		case <-ctx.Done():
			tick.Stop()
			return res, ctx.Err()
		}
	}
	wall := time.Since(start)
	after := cl.Usage()
	poll()
	loadEnd := series[len(series)-1]
	if pubErr != nil {
		tick.Stop()
		return res, fmt.Errorf("loadgen: publishing: %w", pubErr)
	}

	// The drain: every publisher empties, then the cluster stores all.
	closeCtx, cancel := context.WithTimeout(ctx, o.drain)
	defer cancel()
	var cwg sync.WaitGroup
	for _, p := range pubs {
		cwg.Add(1)
		go func() { defer cwg.Done(); p.Close(closeCtx) }()
	}
	cwg.Wait()
	res.Generated, res.Batches = generated.Load(), batches.Load()
	for {
		<-tick.C
		poll()
		last := series[len(series)-1]
		if last.stored >= res.Generated || closeCtx.Err() != nil {
			break
		}
	}
	tick.Stop()
	if cuts != nil {
		// The agents heartbeat on while the last cut seals.
		cuts.wait(2 * time.Minute)
		res.Cuts, res.CutFailures, res.Sealed, res.SealP50, res.SealMax = cuts.result()
	}
	stopControl()
	control.wg.Wait()
	res.Heartbeats, res.HeartbeatFails = control.beats.Load(), control.failed.Load()
	res.AgentCuts, res.Acks, res.AckFailures = control.cuts.Load(), control.acks.Load(), control.ackFailed.Load()
	for _, p := range pubs {
		st := p.Stats()
		res.AppliedErrors += st.AppliedErrors
		res.Republished += st.Republished
	}
	last := series[len(series)-1]
	res.Stored = last.stored
	res.DrainSeconds = last.t - loadEnd.t
	res.Conserved = last.stored == res.Generated
	if t, err := coord.Totals(ctx, q); err == nil {
		for _, d := range t.Drops {
			res.Drops += d
		}
	}
	res.Seconds = wall.Seconds()
	res.GeneratedRate = float64(loadEnd.published) / wall.Seconds()
	res.StoredRate = float64(loadEnd.stored) / wall.Seconds()
	// The second half of the load: the steady state.
	var mid loadPoint
	for _, p := range series {
		if p.t <= loadEnd.t/2 {
			mid = p
		}
	}
	if dt := loadEnd.t - mid.t; dt > 0 {
		res.LateGenRate = float64(loadEnd.published-mid.published) / dt
		res.LateStoredRate = float64(loadEnd.stored-mid.stored) / dt
	}
	delays := publishToQueryable(series)
	if len(delays) > 0 {
		res.DelayP50, res.DelayMax = delays[len(delays)/2], delays[len(delays)-1]
	} else {
		res.DelayMax = -1
	}
	res.Sustained = res.Conserved && res.LateStoredRate >= 0.95*res.LateGenRate && res.DelayMax >= 0 && res.DelayMax < 10 &&
		res.Sealed == res.Cuts && res.CutFailures == 0
	for name, a := range after {
		b := before[name]
		res.Roles = append(res.Roles, roleUse{Role: name, Cores: (a.CPU - b.CPU).Seconds() / wall.Seconds(), PeakRSS: a.PeakRSS})
	}
	slices.SortFunc(res.Roles, func(a, b roleUse) int { return strings.Compare(a.Role, b.Role) })
	if cl != nil {
		if err := os.WriteFile(filepath.Join(dir, "series.json"), seriesJSON(series), 0o644); err != nil {
			return res, err
		}
		var svg bytes.Buffer
		if err := seriesSVG(&svg, res, series, loadEnd.t); err != nil {
			return res, err
		}
		if err := os.WriteFile(filepath.Join(dir, "series.svg"), svg.Bytes(), 0o644); err != nil {
			return res, err
		}
	}
	return res, nil
}

// publishToQueryable is, for each poll of the load whose published
// count the cluster reached later, the seconds until it did: the delay
// from publish to queryable, at the polls' resolution (one second).
// Sorted.
func publishToQueryable(series []loadPoint) []float64 {
	var out []float64
	j := 0
	for _, p := range series {
		if p.published == 0 {
			continue
		}
		for j < len(series) && (series[j].t < p.t || series[j].stored < p.published) {
			j++
		}
		if j == len(series) {
			break
		}
		out = append(out, series[j].t-p.t)
	}
	sort.Float64s(out)
	return out
}

func seriesJSON(series []loadPoint) []byte {
	type point struct {
		T         float64 `json:"t"`
		Published uint64  `json:"published"`
		Stored    uint64  `json:"stored"`
	}
	ps := make([]point, len(series))
	for i, p := range series {
		ps[i] = point{p.t, p.published, p.stored}
	}
	b, _ := json.MarshalIndent(ps, "", " ")
	return b
}

// seriesSVG plots a run's polls in two panels: the rates published and
// stored (over the polls of the last 10 s), and the backlog — samples
// published and not yet queryable — whose bumps are the stalls.
func seriesSVG(w io.Writer, r loadResult, series []loadPoint, loadEnd float64) error {
	const smooth = 10.0 // seconds
	var pubRate, storedRate, backlog []svgchart.XY
	var maxT, maxRate, maxBacklog float64
	for i, p := range series {
		maxT = max(maxT, p.t)
		b := max(float64(p.published)-float64(p.stored), 0)
		maxBacklog = max(maxBacklog, b)
		backlog = append(backlog, svgchart.XY{X: p.t, Y: b})
		j := i
		for j > 0 && p.t-series[j-1].t <= smooth {
			j--
		}
		if dt := p.t - series[j].t; dt > 0 {
			// A poll answered by a replica a little behind may
			// read less than the one before: no negative rates.
			pr := max(float64(p.published)-float64(series[j].published), 0) / dt
			sr := max(float64(p.stored)-float64(series[j].stored), 0) / dt
			maxRate = max(maxRate, pr, sr)
			pubRate = append(pubRate, svgchart.XY{X: p.t, Y: pr})
			storedRate = append(storedRate, svgchart.XY{X: p.t, Y: sr})
		}
	}
	rateUnit, rateScale := unitFor(maxRate, "samples/s")
	blUnit, blScale := unitFor(maxBacklog, "samples")
	scale := func(pts []svgchart.XY, by float64) []svgchart.XY {
		for i := range pts {
			pts[i].Y /= by
		}
		return pts
	}
	xa := svgchart.Axis{Min: 0, Max: niceCeil(maxT)}
	c := svgchart.New()
	ra := svgchart.Axis{Min: 0, Max: niceCeil(maxRate / rateScale)}
	rp := c.Panel(0, fmt.Sprintf("%d hosts: rate (over %g s)", r.Hosts, smooth), "seconds since the load began", rateUnit, xa, ra)
	rp.Line([]svgchart.XY{{X: loadEnd, Y: 0}, {X: loadEnd, Y: ra.Max}}, "#ccc")
	rp.Line(scale(pubRate, rateScale), "#36c")
	rp.Line(scale(storedRate, rateScale), "#c33")
	rp.Label(svgchart.XY{X: 0, Y: 0.94 * ra.Max}, "published", "#36c")
	rp.Label(svgchart.XY{X: 0, Y: 0.87 * ra.Max}, "stored (queryable)", "#c33")
	ba := svgchart.Axis{Min: 0, Max: niceCeil(maxBacklog / blScale)}
	bp := c.Panel(1, "backlog: published, not yet queryable", "seconds since the load began", blUnit, xa, ba)
	bp.Line([]svgchart.XY{{X: loadEnd, Y: 0}, {X: loadEnd, Y: ba.Max}}, "#ccc")
	bp.Line(scale(backlog, blScale), "#c33")
	verdict := "not sustained"
	if r.Sustained {
		verdict = "sustained"
	}
	return c.Write(w, fmt.Sprintf("dcpi loadgen: %d hosts, %.0f s of load", r.Hosts, loadEnd),
		fmt.Sprintf("delay to queryable p50 %.0f s, max %.0f s; second half %.0f%% stored; %s (grey: the load's end)",
			r.DelayP50, r.DelayMax, 100*r.LateStoredRate/max(r.LateGenRate, 1), verdict))
}

// unitFor names what of and scales it to millions or billions when v is
// that large.
func unitFor(v float64, what string) (string, float64) {
	switch {
	case v >= 1e9:
		return what + " (billions)", 1e9
	case v >= 1e6:
		return what + " (millions)", 1e6
	}
	return what, 1
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, so that an
// axis's five steps fall on round numbers.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

func printLoad(w io.Writer, r loadResult, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	verdict := "not sustained"
	if r.Sustained {
		verdict = "sustained"
	}
	fmt.Fprintf(w, "%d hosts, %.1f s: generated %.0f samples/s, stored %.0f/s (second half %.0f of %.0f/s); %d batches; delay to queryable p50 %.0f s, max %.0f s; drained %.1f s after the load; %s\n",
		r.Hosts, r.Seconds, r.GeneratedRate, r.StoredRate, r.LateStoredRate, r.LateGenRate, r.Batches, r.DelayP50, r.DelayMax, r.DrainSeconds, verdict)
	if r.Conserved {
		fmt.Fprintf(w, "  conservation holds exactly: %d generated = %d stored + unknown + dropped (%d dropped)\n", r.Generated, r.Stored, r.Drops)
	} else {
		fmt.Fprintf(w, "  conservation FAILS: %d generated, the cluster holds %d (%+d)\n", r.Generated, r.Stored, int64(r.Stored)-int64(r.Generated))
	}
	if r.HostKeys {
		fmt.Fprintf(w, "  agents: a connection and key per host; %d heartbeats answered, %d not; applied polls failed %d, batches sent again %d; %d moves to a later epoch, %d acknowledgements (%d failed, sent again)\n",
			r.Heartbeats, r.HeartbeatFails, r.AppliedErrors, r.Republished, r.AgentCuts, r.Acks, r.AckFailures)
	} else {
		fmt.Fprintf(w, "  agents: shared connections on the coordinator's key, no heartbeats; applied polls failed %d, batches sent again %d\n", r.AppliedErrors, r.Republished)
	}
	if r.Cuts+r.CutFailures > 0 {
		fmt.Fprintf(w, "  epochs: %d cut (%d cuts failed), %d sealed; from cut to sealed p50 %.0f s, max %.0f s\n", r.Cuts, r.CutFailures, r.Sealed, r.SealP50, r.SealMax)
	}
	for _, u := range r.Roles {
		fmt.Fprintf(w, "  %-12s %.2f cores, peak RSS %d MiB\n", u.Role, u.Cores, u.PeakRSS>>20)
	}
	return nil
}

// findKnee sweeps host counts: doubling from o.hosts until a run is not
// sustained, then bisecting the gap three times.
func findKnee(ctx context.Context, cmd *cobra.Command, w io.Writer, rec *loadgen.Recording, o loadOptions) error {
	step := 0
	try := func(n int) (bool, error) {
		step++
		r, err := runLoadStep(ctx, cmd, rec, o, n, filepath.Join(o.dir, fmt.Sprintf("run%d-%dhosts", step, n)))
		if err != nil {
			return false, err
		}
		return r.Sustained, printLoad(w, r, o.asJSON)
	}
	good, bad := 0, 0
	for n := o.hosts; n <= o.maxHosts; n *= 2 {
		ok, err := try(n)
		if err != nil {
			return err
		}
		if !ok {
			bad = n
			break
		}
		good = n
	}
	if bad == 0 {
		fmt.Fprintf(w, "knee: above --max-hosts %d (%d sustained)\n", o.maxHosts, good)
		return nil
	}
	for range 3 {
		if bad-good <= 1 {
			break
		}
		n := (good + bad) / 2
		ok, err := try(n)
		if err != nil {
			return err
		}
		if ok {
			good = n
		} else {
			bad = n
		}
	}
	if good == 0 {
		fmt.Fprintf(w, "knee: below %d hosts (none sustained)\n", o.hosts)
		return nil
	}
	fmt.Fprintf(w, "knee: %d hosts sustained, %d not\n", good, bad)
	return nil
}

// startProcesses starts the load's cluster as processes of this binary.
func startProcesses(dir string, aggregators int) (*cluster.Processes, error) {
	bin, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return cluster.StartProcesses(bin, dir, aggregators)
}
