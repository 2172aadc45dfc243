// Package fleet replays a loadgen recording as many host agents against a
// cluster and measures what the cluster sustains: each agent publishes the
// recorded host's batches at its real rate with its own name, registers,
// heartbeats and follows epochs as a node does; a run reports rates,
// delay to queryable, conservation, epochs cut and sealed, and each
// role's CPU and memory (of a cluster it starts as processes); FindKnee
// sweeps host counts for the largest one sustained. The recordings
// themselves, and the rewriting of one host into many, are package
// loadgen's.
package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"dcpi/cluster"
	"dcpi/config"
	"dcpi/coordinator"
	"dcpi/loadgen"
	"dcpi/storage"
	"dcpi/transport"
	"dcpi/transport/auth"
	"dcpi/wire"
)

// Options are a load: what to replay, how many hosts for how long, and
// against which cluster.
type Options struct {
	Recording   string
	Hosts       int
	Seconds     float64
	NATSURLs    []string
	Dir         string
	Aggregators int
	Conns       int
	Prefix      string
	BufferKB    int
	EndToEnd    bool
	HostKeys    bool
	Heartbeat   time.Duration
	CutEvery    time.Duration
	FindKnee    bool
	MaxHosts    int
	JSON        bool
	Drain       time.Duration
	// NATS is the cluster's connection settings (credentials, CA); its
	// URLs are NATSURLs, or the cluster RunStep starts.
	NATS config.NATS
	// Binary is the dcpi binary whose processes make the cluster RunStep
	// starts when NATSURLs is empty.
	Binary string
	// Warn receives a tool connection's warnings; Logger the agents' log
	// (nil: discarded).
	Warn   io.Writer
	Logger *slog.Logger
}

// Point is one poll during a run: seconds since the load began,
// samples the agents had published (handed to their publishers) and the
// cluster held.
type Point struct {
	t                 float64
	published, stored uint64
}

// RoleUse is one role's CPU and memory over a run.
type RoleUse struct {
	Role    string  `json:"role"`
	Cores   float64 `json:"cores"`    // CPU seconds / wall seconds of the load
	PeakRSS uint64  `json:"peak_rss"` // bytes
}

// Result is one run's report.
type Result struct {
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
	Roles          []RoleUse `json:"roles"`
}

// RunStep runs one load of n hosts, on a cluster it starts under dir (as
// processes of o.Binary) unless o.NATSURLs names one.
func RunStep(ctx context.Context, rec *loadgen.Recording, o Options, n int, dir string) (Result, error) {
	res := Result{Hosts: n, Seconds: o.Seconds}
	var cl *cluster.Processes
	urls := o.NATSURLs
	if len(urls) == 0 {
		var err error
		if cl, err = cluster.StartProcesses(o.Binary, dir, o.Aggregators); err != nil {
			return res, err
		}
		defer cl.Stop()
		urls = []string{cl.URL()}
	}
	ncfg := o.NATS
	ncfg.URLs = urls

	qc, err := cluster.ConnectTool(ctx, ncfg, auth.Query, "loadgen-query", o.Warn)
	if err != nil {
		return res, err
	}
	defer qc.Close()
	coord := coordinator.NewClient(qc)
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("%s%04d", o.Prefix, i)
	}
	q := storage.Query{Hosts: hosts}
	if cl != nil {
		q = storage.Query{} // a fresh cluster holds the agents' hosts only
	}
	held := func() (uint64, error) {
		c, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		t, err := coord.Totals(c, q, false)
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

	agentConns, closeConns, err := connectAgents(ctx, ncfg, hosts, o)
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
		pcfg := transport.PublisherConfig{Host: h, MaxBufferedBytes: o.BufferKB << 10, Logger: o.Logger}
		if o.EndToEnd {
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

	res.HostKeys = o.HostKeys
	control := agentControl{agents: agents}
	ctrlCtx, stopControl := context.WithCancel(ctx)
	defer func() { stopControl(); control.wg.Wait() }()
	if o.HostKeys {
		if err := registerAgents(ctx, hosts, coordOf, int(rec.Header.CPUs)); err != nil {
			return res, err
		}
		control.start(ctrlCtx, hosts, coordOf, o.Heartbeat)
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
	length := time.Duration(o.Seconds * float64(time.Second))
	before := cl.Usage()
	start := time.Now()
	var cuts *epochCutter
	if o.CutEvery > 0 {
		if cuts, err = startEpochCutter(ctrlCtx, ncfg, o.Warn, start, o.CutEvery, length); err != nil {
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
	var series []Point
	poll := func() {
		p := Point{t: time.Since(start).Seconds(), published: generated.Load()}
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
	closeCtx, cancel := context.WithTimeout(ctx, o.Drain)
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
	if t, err := coord.Totals(ctx, q, false); err == nil {
		for _, d := range t.Drops {
			res.Drops += d
		}
	}
	res.Seconds = wall.Seconds()
	res.GeneratedRate = float64(loadEnd.published) / wall.Seconds()
	res.StoredRate = float64(loadEnd.stored) / wall.Seconds()
	// The second half of the load: the steady state.
	var mid Point
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
		res.Roles = append(res.Roles, RoleUse{Role: name, Cores: (a.CPU - b.CPU).Seconds() / wall.Seconds(), PeakRSS: a.PeakRSS})
	}
	slices.SortFunc(res.Roles, func(a, b RoleUse) int { return strings.Compare(a.Role, b.Role) })
	if cl != nil {
		if err := os.WriteFile(filepath.Join(dir, "series.json"), seriesJSON(series), 0o644); err != nil {
			return res, err
		}
		var svg bytes.Buffer
		if err := SeriesSVG(&svg, res, series, loadEnd.t); err != nil {
			return res, err
		}
		if err := os.WriteFile(filepath.Join(dir, "series.svg"), svg.Bytes(), 0o644); err != nil {
			return res, err
		}
	}
	return res, nil
}

// Check refuses options out of range, or that contradict each other,
// before any load.
func (o Options) Check() error {
	if o.Hosts < 1 || o.Hosts > 100_000 || o.Seconds <= 0 || o.Conns < 1 || o.Aggregators < 1 || o.BufferKB < 1 || o.Heartbeat <= 0 {
		return fmt.Errorf("want --hosts 1-100000, --seconds > 0, --conns >= 1, --aggregators >= 1, --buffer-kb >= 1, --heartbeat > 0")
	}
	if o.CutEvery < 0 || (o.CutEvery > 0 && !o.HostKeys) {
		return errors.New("--cut-every: want >= 0, and --host-keys (only agents that heartbeat follow epochs)")
	}
	if err := wire.CheckHost(o.Prefix + "0"); err != nil {
		return fmt.Errorf("--prefix %q: %w", o.Prefix, err)
	}
	if len(o.NATSURLs) > 0 && o.FindKnee {
		return errors.New("--find-knee starts a fresh cluster for each run: not with --nats")
	}
	return nil
}

// WriteRecordingLine describes the recording a run replays: its host,
// length and rates.
func WriteRecordingLine(w io.Writer, file string, rec *loadgen.Recording) {
	h := rec.Header
	secs := float64(h.Cycles) / float64(h.ClockHz)
	fmt.Fprintf(w, "loadgen: recording %s: %s, %d CPUs, %g s, %.0f samples/s per CPU, drain every %g s, publish window %g s\n", file, h.Host, h.CPUs, secs,
		float64(h.Generated)/secs/float64(h.CPUs), float64(h.FlushEvery)/float64(h.ClockHz), float64(h.PublishEvery)/float64(h.ClockHz))
}
