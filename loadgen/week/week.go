package week

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"dcpi/cluster"
	"dcpi/conservation"
	"dcpi/coordinator"
	"dcpi/loadgen"
	"dcpi/storage"
	"dcpi/transport"
	"dcpi/wire"
)

// Config is a simulated run.
type Config struct {
	// Recording is the host the fleet replays (loadgen record), each
	// host publishing WindowsPerHour of its publish windows per hour,
	// in order and looped: the recorded programs start and exit, so the
	// hot procedures move from hour to hour and a merge has work.
	Recording      *loadgen.Recording
	Hosts          int // 0: 4
	WindowsPerHour int // 0: 1
	Hours          int // simulated hours; 168 is a week
	// Retention is the coordinator's policy (the zero value keeps all);
	// the epochs are hourly.
	Retention coordinator.Retention
	Replicas  int // coordinator replicas, 1, 3 or 5 (0: 1)
	// SettleEvery is how many hours apart the size is also measured
	// settled: the leader's database compacted whole first (0: 24).
	SettleEvery int
	// QueryRepeat runs each query this many times and keeps the median
	// (0: 3): the machine is shared, and one run can catch a stall.
	QueryRepeat int
	// Start is the simulated time the run begins, on an hour (zero:
	// Monday 2024-01-01 00:00 UTC).
	Start time.Time
	// Dir holds the cluster ("": a temporary directory, removed).
	Dir string
	// Stall is the longest the run waits for progress (the hour's
	// samples stored, its cut and seal, retention) before it gives up;
	// 0: 2 minutes. It only bounds a failure: no wait decides by time.
	Stall time.Duration
	// Hour, if set, is told each hour's figures as they are measured.
	Hour   func(Hour)
	Logger *slog.Logger
}

// Hour is what was measured after a simulated hour: its cut made and
// sealed and retention caught up.
type Hour struct {
	Hour       int    `json:"hour"`        // simulated hours since the start
	OpenEpoch  uint64 `json:"open_epoch"`  // the epoch the hour's cut opened
	Epochs     int    `json:"epochs"`      // epochs in the database, the open one included
	Merged     int    `json:"merged"`      // of them, merges of several hours
	DiskBytes  uint64 `json:"disk_bytes"`  // the leader's Pebble files (sstables, WAL, ...)
	TableBytes uint64 `json:"table_bytes"` // of them, the live sstables
	WALBytes   uint64 `json:"wal_bytes"`   // the WAL
	StaleBytes uint64 `json:"stale_bytes"` // sstables compacted away, not yet deleted (obsolete or held by a reader)
	DirBytes   uint64 `json:"dir_bytes"`   // the leader's database directory, walked
	// Settled is TableBytes after compacting the database whole, which
	// flushes the memtable and drops what range deletions covered: the
	// data, measured every SettleEvery hours. The WAL (up to a memtable,
	// 32 MiB) and files awaiting deletion come and go beside it.
	Settled    uint64 `json:"settled_bytes,omitempty"`
	Generated  uint64 `json:"generated"` // samples the hosts published so far
	Stored     uint64 `json:"stored"`
	Dropped    uint64 `json:"dropped"`
	Expired    uint64 `json:"expired"`
	LastHour   Query  `json:"last_hour"`
	LastWeek   Query  `json:"last_week"`
	WallMillis int64  `json:"wall_ms"` // the hour's wall time, measurements included
}

// Query is one dcpiprof query's figures: the median time of its runs,
// the epochs the range covered and the samples the table summed.
type Query struct {
	Millis  float64 `json:"ms"`
	Epochs  int     `json:"epochs"`
	Samples uint64  `json:"samples"`
}

// Result is a run: its series and the totals its checks read.
type Result struct {
	Hosts           int    `json:"hosts"`
	Hours           int    `json:"hours"`
	Replicas        int    `json:"replicas"`
	Retention       string `json:"retention"`
	SamplesHostHour uint64 `json:"samples_per_host_hour"`
	Series          []Hour `json:"series"`
	// Epochs are the leader's epochs at the end: what the cuts, merges
	// and expiries left, each with its span.
	Epochs []Epoch `json:"epochs"`
	// The coordinator's counters, as the replicas count what they apply
	// (each the same; the largest, should one have restarted and lost
	// its counts).
	Cuts          float64       `json:"scheduled_cuts_counted"`     // dcpi_coordinator_scheduled_cuts_total{result="cut"}
	Superseded    float64       `json:"scheduled_cuts_superseded"`  // {result="superseded"}
	MergedAway    float64       `json:"epochs_merged_away_counted"` // dcpi_coordinator_retention_epochs_total{action="merged"}
	ExpiredEpochs float64       `json:"epochs_expired_counted"`     // {action="expired"}
	Conservation  string        `json:"conservation"`
	Balanced      bool          `json:"balanced"`
	Wall          time.Duration `json:"wall_ns"`
}

// Epoch is one epoch of the leader's at the end of a run.
type Epoch struct {
	Number        uint64    `json:"number"`
	MergedThrough uint64    `json:"merged_through,omitempty"` // a merge of Number..MergedThrough
	Start         time.Time `json:"start"`
	End           time.Time `json:"end,omitzero"` // zero: open
}

// DefaultStart is a run's simulated start: a Monday, 00:00 UTC.
var DefaultStart = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *Config) defaults() error {
	if c.Recording == nil {
		return errors.New("week: no recording")
	}
	if c.Hours < 1 {
		return fmt.Errorf("week: %d hours: want at least 1", c.Hours)
	}
	c.Hosts = cmpOr(c.Hosts, 4)
	c.WindowsPerHour = cmpOr(c.WindowsPerHour, 1)
	c.Replicas = cmpOr(c.Replicas, 1)
	c.SettleEvery = cmpOr(c.SettleEvery, 24)
	c.QueryRepeat = cmpOr(c.QueryRepeat, 3)
	if c.Start.IsZero() {
		c.Start = DefaultStart
	}
	if c.Start.Truncate(time.Hour) != c.Start {
		return fmt.Errorf("week: start %v: want a time on the hour", c.Start)
	}
	if c.Stall <= 0 {
		c.Stall = 2 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// run is a run in progress.
type run struct {
	cfg    Config
	clk    *Clock
	cl     *cluster.Cluster
	hosts  []*host
	window uint64 // cycles of one recorded publish window
	gen    uint64 // samples published
}

// host is one replayed host: its agent, its publisher and where it is
// in the recording.
type host struct {
	agent *loadgen.Agent
	pub   *transport.Publisher
	loop  uint64
	item  int
}

// Run operates the fleet for cfg.Hours simulated hours and returns what
// it measured. The checks (Check) are the caller's.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	began := time.Now()
	r := &run{cfg: cfg, clk: NewClock(cfg.Start)}
	h := cfg.Recording.Header
	r.window = max(h.PublishEvery, h.FlushEvery)
	if r.window == 0 {
		return nil, errors.New("week: the recording has no drain interval")
	}
	var err error
	r.cl, err = cluster.Start(ctx, cluster.Config{Dir: cfg.Dir, Replicas: cfg.Replicas, Aggregators: 1,
		EpochEvery: time.Hour, Retention: cfg.Retention, Now: r.clk.Now, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	defer r.cl.Close()
	for i := range cfg.Hosts {
		name := fmt.Sprintf("wk%03d", i)
		a, err := loadgen.NewAgent(cfg.Recording, name, 1)
		if err != nil {
			return nil, err
		}
		// The hosts share the cluster's connection and publish without
		// registering (as loadgen run --host-keys=false): a cut seals
		// once the hour's batches are applied, which the driver waits
		// for before it moves the clock.
		p, err := transport.NewPublisher(r.cl.Conn(), transport.PublisherConfig{Host: name, Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
		defer p.Close(context.WithoutCancel(ctx))
		r.hosts = append(r.hosts, &host{agent: a, pub: p})
	}
	res := &Result{Hosts: cfg.Hosts, Hours: cfg.Hours, Replicas: cfg.Replicas, Retention: fmt.Sprintf("{full: %v, merge_to: %v, keep: %v}",
		cfg.Retention.Full, cfg.Retention.MergeTo, cfg.Retention.Keep)}
	for hr := range cfg.Hours {
		t0 := time.Now()
		m, err := r.hour(ctx, hr)
		if err != nil {
			return res, fmt.Errorf("week: hour %d: %w", hr+1, err)
		}
		if hr == 0 {
			res.SamplesHostHour = r.gen / uint64(cfg.Hosts)
		}
		m.WallMillis = time.Since(t0).Milliseconds()
		res.Series = append(res.Series, m)
		if cfg.Hour != nil {
			cfg.Hour(m)
		}
	}
	if err := r.finish(ctx, res); err != nil {
		return res, err
	}
	res.Wall = time.Since(began)
	return res, nil
}

// hour runs simulated hour hr: the hosts publish it into the open epoch
// and it is stored; the clock moves to its end, where the leader cuts
// the epoch, seals it and applies retention; then the figures.
func (r *run) hour(ctx context.Context, hr int) (Hour, error) {
	end := r.cfg.Start.Add(time.Duration(hr+1) * time.Hour)
	if err := r.publish(uint64(hr+1) * uint64(r.cfg.WindowsPerHour)); err != nil {
		return Hour{}, err
	}
	if err := r.waitStored(ctx); err != nil {
		return Hour{}, err
	}
	r.clk.Set(end)
	open := uint64(hr + 2) // epoch 1 opened at the start; one cut an hour
	eps, err := r.waitCaughtUp(ctx, open, end)
	if err != nil {
		return Hour{}, err
	}
	for _, h := range r.hosts {
		h.agent.Cut(open) // the next hour's batches carry the new epoch
	}
	m := Hour{Hour: hr + 1, OpenEpoch: open, Epochs: len(eps), Generated: r.gen}
	for _, e := range eps {
		if e.MergedThrough != 0 {
			m.Merged++
		}
	}
	if err := r.measureSize(&m, (hr+1)%r.cfg.SettleEvery == 0); err != nil {
		return m, err
	}
	tot, err := r.cl.Totals(ctx)
	if err != nil {
		return m, err
	}
	m.Stored, m.Dropped, m.Expired = tot.Stored, tot.Dropped(), tot.Expired
	if m.LastHour, err = r.query(ctx, "1h", end); err != nil {
		return m, err
	}
	if m.LastWeek, err = r.query(ctx, "168h", end); err != nil {
		return m, err
	}
	return m, nil
}

// publish hands every host's recorded items of its first windows
// publish windows (the recording looped) to its publisher. An item
// belongs to the window its cycle is nearest the end of: a batch is cut
// at a window's end, give or take a drain.
func (r *run) publish(windows uint64) error {
	var b wire.Batch
	for _, h := range r.hosts {
		for (h.agent.At(h.loop, h.item)+r.window/2)/r.window <= windows {
			var err error
			if h.agent.Batch(h.loop, h.item, &b) {
				if err = h.pub.PublishBatch(&b); err == nil {
					r.gen += loadgen.Samples(&b)
				}
			} else {
				err = h.pub.PublishImage(h.agent.Image(h.item))
			}
			if err != nil {
				return err
			}
			if h.item++; h.item == h.agent.Len() {
				h.loop, h.item = h.loop+1, 0
			}
		}
	}
	return nil
}

// waitStored flushes the publishers and waits until the database holds
// every sample published, stored, dropped or expired.
func (r *run) waitStored(ctx context.Context) error {
	for _, h := range r.hosts {
		if err := h.pub.Flush(ctx); err != nil {
			return err
		}
	}
	return r.waitFor(ctx, "the hour's samples stored", func() (bool, error) {
		tot, err := r.cl.Totals(ctx)
		return err == nil && tot.Stored+tot.Dropped()+tot.Expired >= r.gen, err
	})
}

// waitCaughtUp waits until the leader has cut epoch open-1 (open is the
// open epoch), sealed every epoch before it, and has no retention command
// left to propose at now, and every replica has applied the log and
// finished the compactions it queued; it returns the leader's epochs.
func (r *run) waitCaughtUp(ctx context.Context, open uint64, now time.Time) ([]storage.Epoch, error) {
	var eps []storage.Epoch
	err := r.waitFor(ctx, fmt.Sprintf("epoch %d cut and sealed, retention caught up", open-1), func() (bool, error) {
		l := r.leader()
		if l == nil {
			return false, nil
		}
		var err error
		if eps, err = l.DB().Epochs(); err != nil || len(eps) == 0 {
			return false, err
		}
		last := eps[len(eps)-1]
		if last.Number != open || last.State != storage.EpochOpen {
			return false, nil
		}
		for _, e := range eps[:len(eps)-1] {
			if e.State != storage.EpochSealed {
				return false, nil
			}
		}
		if _, due := coordinator.RetentionDue(eps, r.cfg.Retention, now); due {
			return false, nil
		}
		// Every replica has applied the hour's commands and compacted
		// what its seal, merges and expiries left: the size and the
		// queries then see the epochs settled.
		for _, rep := range r.cl.Replicas() {
			if rep.FSM().Compacting() || rep.Raft().AppliedIndex() < l.Raft().LastIndex() {
				return false, nil
			}
		}
		return true, nil
	})
	return eps, err
}

// leader is the replica that leads, or nil during an election.
func (r *run) leader() *coordinator.Replica {
	for _, rep := range r.cl.Replicas() {
		if rep.IsLeader() {
			return rep
		}
	}
	return nil
}

// waitFor polls ok every 10 ms until it holds, fails, or shows no
// success for the configured stall.
func (r *run) waitFor(ctx context.Context, what string, ok func() (bool, error)) error {
	deadline := time.Now().Add(r.cfg.Stall)
	for {
		done, err := ok()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: no progress in %v", what, r.cfg.Stall)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// measureSize reads the leader's database size: Pebble's files, its live
// sstables and the directory's files; settled, the sstables after
// compacting it whole.
func (r *run) measureSize(m *Hour, settle bool) error {
	l := r.leader()
	if l == nil {
		return errors.New("no leader to measure")
	}
	if settle {
		if err := l.DB().Compact(); err != nil {
			return err
		}
	}
	st, err := l.DB().EngineStats()
	if err != nil {
		return err
	}
	m.DiskBytes, m.TableBytes, m.WALBytes, m.StaleBytes = st.DiskBytes, st.TableBytes, st.WALBytes, st.ObsoleteBytes+st.ZombieBytes
	if settle {
		m.Settled = st.TableBytes
	}
	m.DirBytes, err = dirBytes(filepath.Join(r.cl.Dir(), l.ID(), "db"))
	return err
}

// dirBytes sums the sizes of the files under dir.
func dirBytes(dir string) (uint64, error) {
	var n uint64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil // a file Pebble removed as we walked
			}
			return err
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += uint64(fi.Size())
			}
		}
		return nil
	})
	return n, err
}

// finish reads the run's totals: conservation and the coordinator's
// counters of cuts, merges and expiries, summed over the replicas (a
// leader change moves a count, not the sum).
func (r *run) finish(ctx context.Context, res *Result) error {
	for _, h := range r.hosts {
		if err := h.pub.Flush(ctx); err != nil {
			return err
		}
	}
	tot, err := r.cl.Totals(ctx)
	if err != nil {
		return err
	}
	if l := r.leader(); l != nil {
		eps, err := l.DB().Epochs()
		if err != nil {
			return err
		}
		for _, e := range eps {
			res.Epochs = append(res.Epochs, Epoch{Number: e.Number, MergedThrough: e.MergedThrough, Start: e.Start, End: e.End})
		}
	}
	lines, ok := conservation.Lines(r.gen, r.gen, tot, conservation.Views{})
	res.Conservation, res.Balanced = lines[0], ok
	for _, rep := range r.cl.Replicas() {
		c, err := counters(rep)
		if err != nil {
			return err
		}
		res.Cuts = max(res.Cuts, c[`dcpi_coordinator_scheduled_cuts_total{result="cut"}`])
		res.Superseded = max(res.Superseded, c[`dcpi_coordinator_scheduled_cuts_total{result="superseded"}`])
		res.MergedAway = max(res.MergedAway, c[`dcpi_coordinator_retention_epochs_total{action="merged"}`])
		res.ExpiredEpochs = max(res.ExpiredEpochs, c[`dcpi_coordinator_retention_epochs_total{action="expired"}`])
	}
	return nil
}
