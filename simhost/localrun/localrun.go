// Package localrun runs programs on simulated hosts profiled by DCPI into
// one new profile database, with no cluster: dcpi profile's run, as perf
// record is Linux's. It owns the run (N hosts, each its own seed, the
// first one's programs on the terminal), stopping on request, the
// programs' exit statuses, and the database's life: written aside in a
// temporary directory beside the output and renamed into place only when
// complete, a database already there kept as NAME.old, anything else
// refused. Printing what a run found is the command's.
package localrun

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"dcpi/conservation"
	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/simhost"
	"dcpi/storage"
	"dcpi/wire"
)

// MaxHosts bounds Config.Hosts: every host is a whole simulated machine in
// this process.
const MaxHosts = 64

// Config is one local profile run.
type Config struct {
	// Machine and Node configure every host; host i runs with seed
	// Machine.Seed + i, named after Node.Node.Host (Names).
	Machine  hwsim.Config
	Node     simhost.Config
	Programs []simhost.Program
	Hosts    int
	Seconds  float64 // simulated; 0: until the programs exit
	// Output is the profile database's path.
	Output string
}

// Host is one simulated host of a run.
type Host struct {
	Machine *hwsim.Machine
	Sim     *simhost.Host
	Procs   []*hwsim.Process // one per program
}

// Run is a local profile run, from its start to its database's commit.
type Run struct {
	cfg       Config
	out       string
	existing  outputState
	tmp       string
	db        *storage.DB
	committed bool
	names     []string
	hosts     []Host
	// Stopped says an interrupt stopped the machines before their end.
	Stopped bool
	// Elapsed is the wall time the machines ran.
	Elapsed time.Duration
	// Removed are the temporary databases of earlier runs into the same
	// output that were killed before they could remove them.
	Removed []string
}

// tmpPrefix begins the name of a run's temporary database beside out.
func tmpPrefix(out string) string { return "." + filepath.Base(out) + ".tmp-" }

// removeAbandoned removes the temporary databases beside out that no
// process holds open (storage.Abandoned): a run killed before its
// Close. One still open, a concurrent run's, is left alone.
func removeAbandoned(out string) []string {
	found, _ := filepath.Glob(filepath.Join(filepath.Dir(out), tmpPrefix(out)+"*"))
	var removed []string
	for _, dir := range found {
		if storage.Abandoned(dir) && os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}

// Start checks the output path, opens the new database aside and builds
// every host with its programs spawned; nothing runs until Wait. Close
// removes what a run that is not committed wrote.
func Start(c Config) (_ *Run, err error) {
	r := &Run{cfg: c, out: filepath.Clean(c.Output)}
	if r.existing, err = checkProfileOutput(r.out); err != nil {
		return nil, err
	}
	if c.Hosts < 1 || c.Hosts > MaxHosts {
		return nil, fmt.Errorf("--hosts %d: want 1 to %d", c.Hosts, MaxHosts)
	}
	if r.names, err = HostNames(c.Node.Node.Host, c.Hosts); err != nil {
		return nil, err
	}
	r.Removed = removeAbandoned(r.out)
	if r.tmp, err = os.MkdirTemp(filepath.Dir(r.out), tmpPrefix(r.out)); err != nil {
		return nil, fmt.Errorf("-o %s: %w", r.out, err)
	}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	if r.db, err = storage.Open(r.tmp, storage.Options{NoSync: true}); err != nil {
		return nil, err
	}
	sink := simhost.LocalSink{DB: r.db}
	for i, name := range r.names {
		h, err := r.startHost(sink, i, name)
		if err != nil {
			return nil, err
		}
		r.hosts = append(r.hosts, h)
	}
	return r, nil
}

// startHost builds host i. One host's programs talk to the terminal; the
// rest of the fleet runs them with no input and output discarded.
func (r *Run) startHost(sink simhost.LocalSink, i int, name string) (Host, error) {
	hc, nc := r.cfg.Machine, r.cfg.Node
	hc.Seed, hc.Hostname, nc.Node.Host = hc.Seed+uint64(i), name, name
	if i > 0 {
		hc.Stdin, hc.Stdout, hc.Stderr = strings.NewReader(""), io.Discard, io.Discard
	}
	var h Host
	var err error
	if h.Machine, err = hwsim.New(hc); err != nil {
		return h, err
	}
	// The node record says how many events a sample stands for, for
	// dcpi pprof's estimated counts, and an out-of-order core's model,
	// which dcpi calc's in-order schedules do not describe.
	labels := nc.Labels
	if hc.Model.OutOfOrder() {
		labels = maps.Clone(labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[alpha.ModelLabel] = hc.Model.Name
	}
	if err := sink.Register(name, hc.CPUs, labels, nc.Profile, time.Now()); err != nil {
		return h, err
	}
	if h.Sim, err = simhost.New(h.Machine, nc, sink.ForHost(name)); err != nil {
		return h, err
	}
	env := []string{"PATH=/bin", "HOME=/", "TERM=dumb", "LANG=C"}
	h.Procs = make([]*hwsim.Process, len(r.cfg.Programs))
	for j, p := range r.cfg.Programs {
		if h.Procs[j], err = h.Machine.Spawn(p.Path, p.Argv, env); err != nil {
			return h, fmt.Errorf("run %s: %w", p.Given, err)
		}
	}
	return h, nil
}

// Wait runs every host until its programs exit or Seconds of simulated
// time; a value on stop stops the machines there (what ran is profiled,
// and Stopped says so).
func (r *Run) Wait(stop <-chan os.Signal) (os.Signal, error) {
	ran := make(chan error, len(r.hosts))
	limit := uint64(r.cfg.Seconds * float64(r.cfg.Machine.ClockHz))
	start := time.Now()
	for i := range r.hosts {
		go func(sh *simhost.Host) { ran <- sh.Run(limit) }(r.hosts[i].Sim)
	}
	var sig os.Signal
	var runErr error
	for running := len(r.hosts); running > 0; {
		select {
		case err := <-ran:
			running--
			runErr = cmp.Or(runErr, err)
		case s := <-stop:
			if sig == nil {
				sig, r.Stopped = s, true
				for i := range r.hosts {
					r.hosts[i].Sim.Stop()
				}
			}
		}
	}
	r.Elapsed = time.Since(start)
	return sig, runErr
}

// Hosts are the run's hosts, in order.
func (r *Run) Hosts() []Host { return r.hosts }

// Names are the hosts' names.
func (r *Run) Names() []string { return r.names }

// DB is the new database, open until Commit or Close.
func (r *Run) DB() *storage.DB { return r.db }

// Output is where the database goes.
func (r *Run) Output() string { return r.out }

// Machines are the hosts' machines.
func (r *Run) Machines() []*hwsim.Machine {
	out := make([]*hwsim.Machine, len(r.hosts))
	for i := range r.hosts {
		out[i] = r.hosts[i].Machine
	}
	return out
}

// SimSeconds is how long the longest host ran, simulated.
func (r *Run) SimSeconds() float64 {
	var s float64
	for _, h := range r.hosts {
		s = max(s, r.hostSeconds(h))
	}
	return s
}

func (r *Run) hostSeconds(h Host) float64 {
	return float64(h.Sim.SimCycles()) / float64(r.cfg.Machine.ClockHz)
}

// Unfinished is a program still running when the run stopped.
type Unfinished struct {
	Program    simhost.Program
	Host       string
	SimSeconds float64
}

// Unfinished lists the programs still running at the end, host by host.
func (r *Run) Unfinished() []Unfinished {
	var out []Unfinished
	for _, h := range r.hosts {
		for i, p := range h.Procs {
			if p.State() < hwsim.ProcZombie {
				out = append(out, Unfinished{Program: r.cfg.Programs[i], Host: h.Machine.Config().Hostname, SimSeconds: r.hostSeconds(h)})
			}
		}
	}
	return out
}

// ExitCode is the shell exit code of the first program that exited
// nonzero (128+N if signal N killed it), or 0.
func (r *Run) ExitCode() int {
	for _, h := range r.hosts {
		for _, p := range h.Procs {
			if p.State() >= hwsim.ProcZombie {
				if code := ExitCode(p.ExitStatus()); code != 0 {
					return code
				}
			}
		}
	}
	return 0
}

// ExitCode maps a wait status to a shell exit code.
func ExitCode(status int) int { return hwsim.ExitCode(status) }

// Conservation is the run's conservation lines from its database: every
// sample the hosts' hardware generated stored or counted as dropped, in
// the flat view, and in the stack and ProfileMe views when v turns them
// on.
func (r *Run) Conservation(v conservation.Views) ([]string, bool, error) {
	var generated uint64
	for _, h := range r.hosts {
		generated += h.Sim.Generated()
		v.MeTagged += h.Sim.MeTagged()
	}
	now, err := Totals(r.db, storage.Query{})
	if err != nil {
		return nil, false, err
	}
	lines, ok := conservation.Lines(generated, generated, now, v)
	return lines, ok, nil
}

// Totals is what db holds of each view for q.
func Totals(db *storage.DB, q storage.Query) (conservation.Totals, error) {
	s, u, d, err := db.Totals(q)
	if err != nil {
		return conservation.Totals{}, err
	}
	ss, sd, err := db.StackTotals(q)
	if err != nil {
		return conservation.Totals{}, err
	}
	ms, mu, md, err := db.MeTotals(q)
	if err != nil {
		return conservation.Totals{}, err
	}
	x, err := db.ExpiredTotals(q)
	return conservation.Totals{Stored: s + u, Drops: d, Expired: x.Samples, StackStored: ss, StackDrops: sd, StackExpired: x.StackSamples,
		MeStored: ms + mu, MeDrops: md, MeExpired: x.MeSamples}, err
}

// Commit closes the database and renames it into place; kept says a
// database that was there is now Output + ".old".
func (r *Run) Commit() (kept bool, err error) {
	err = r.db.Close()
	r.db = nil
	if err != nil {
		return false, fmt.Errorf("closing the profile database: %w", err)
	}
	if err := commitProfile(r.tmp, r.out, r.existing); err != nil {
		return false, err
	}
	r.committed = true
	return r.existing == outputDatabase, nil
}

// Close closes the database and, unless the run was committed, removes
// what it wrote.
func (r *Run) Close() {
	if r.db != nil {
		r.db.Close()
		r.db = nil
	}
	if !r.committed && r.tmp != "" {
		os.RemoveAll(r.tmp) // ours: made by Start, never holds anything else
	}
}

// HostNames names n hosts after host: host itself when n is 1, else
// host with its trailing digits replaced by 0..n-1.
func HostNames(host string, n int) ([]string, error) {
	if n == 1 {
		return []string{host}, nil
	}
	base := strings.TrimRight(host, "0123456789")
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%d", base, i)
		if err := wire.CheckHost(names[i]); err != nil {
			return nil, fmt.Errorf("--host %q --hosts %d: %w", host, n, err)
		}
	}
	return names, nil
}

// Baseline is what a database held before a run added to it.
type Baseline struct {
	Totals conservation.Totals
	Values wire.ValueStats
}

// ContinueHost prepares ncfg's host to continue in db after an earlier
// run's batches and value records (new ones would be taken for
// redeliveries), registers the host with the events a sample stands for
// (dcpi pprof's estimated counts), and returns what db held before, so
// that the conservation lines count this run's samples only.
func ContinueHost(ctx context.Context, db *storage.DB, ncfg *simhost.Config, cpus int) (Baseline, error) {
	var b Baseline
	host := ncfg.Node.Host
	sink := simhost.LocalSink{DB: db}
	var err error
	if ncfg.Node.FirstSeq, err = sink.FirstSeq(host, cpus); err != nil {
		return b, err
	}
	if ncfg.Node.Values.Module != "" {
		seq, err := db.ValuesApplied(host)
		if err != nil {
			return b, err
		}
		ncfg.Node.Values.FirstSeq = seq + 1
		if _, b.Values, err = db.ValueTotals(ctx, storage.ValueQuery{}); err != nil {
			return b, err
		}
	}
	if err := sink.Register(host, cpus, ncfg.Labels, ncfg.Profile, time.Now()); err != nil {
		return b, err
	}
	b.Totals, err = Totals(db, storage.Query{})
	return b, err
}

// WriteTruths writes the ground truth files a run asks for, each summed
// over the hosts per image and instruction: the per-instruction truth
// (--truth) and value sampling's (--values-truth); "" skips one.
func (r *Run) WriteTruths(truthFile, valuesTruthFile string) error {
	if truthFile != "" {
		err := simhost.WriteFileWith(truthFile, func(w io.Writer) error { return hwsim.WriteGroundTruthOf(w, r.Machines()...) })
		if err != nil {
			return fmt.Errorf("--truth %s: %w", truthFile, err)
		}
	}
	if valuesTruthFile != "" {
		return simhost.WriteValueTruthFile(r.Machines(), valuesTruthFile)
	}
	return nil
}
