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
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
	cfg      Config
	out      string
	existing outputState
	tmp      string
	names    []string
	hosts    []Host
	stdin    *stopReader // the first host's standard input; nil: none

	// mu orders Commit, Close and Abort: a forced exit never meets a
	// rename half done, and the database is closed once.
	mu        sync.Mutex
	db        *storage.DB
	committed bool

	stopMu sync.Mutex
	signal os.Signal // the first Stop's
	// Stopped says an interrupt stopped the machines before their end.
	Stopped bool
	// Elapsed is the wall time the machines ran.
	Elapsed time.Duration
	// Removed are the temporary databases of earlier runs into the same
	// output that were killed before they could remove them.
	Removed []string
}

// tmpPrefix begins the name of a run's temporary database beside out;
// the process ID of the run that made it ends it.
func tmpPrefix(out string) string { return "." + filepath.Base(out) + ".tmp-" }

// removeAbandoned removes the temporary databases beside out of runs
// killed before their Close (SIGKILL: every other signal's handler
// removes its own): one no process holds open (storage.Abandoned), or an
// empty one (killed before the database was opened) whose run's process
// is gone. One still open, a concurrent run's, is left alone, and so is a
// directory that is neither.
func removeAbandoned(out string) []string {
	found, _ := filepath.Glob(filepath.Join(filepath.Dir(out), tmpPrefix(out)+"*"))
	var removed []string
	for _, dir := range found {
		if (storage.Abandoned(dir) || emptyOfDeadRun(dir, out)) && os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}

// emptyOfDeadRun says dir is an empty temporary directory whose name ends
// with the ID of a process that no longer exists, or of this one (an
// earlier process with the same ID made it).
func emptyOfDeadRun(dir, out string) bool {
	pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), tmpPrefix(out)))
	if err != nil || pid <= 0 {
		return false
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) > 0 {
		return false
	}
	return pid == os.Getpid() || errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
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
	r.tmp = filepath.Join(filepath.Dir(r.out), tmpPrefix(r.out)+strconv.Itoa(os.Getpid()))
	if err = os.Mkdir(r.tmp, 0o755); err != nil {
		r.tmp = ""
		return nil, fmt.Errorf("-o %s: %w", r.out, err)
	}
	if c.Machine.Stdin != nil {
		r.stdin = newStopReader(c.Machine.Stdin)
		r.cfg.Machine.Stdin = r.stdin
	}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	if r.db, err = storage.Open(r.tmp, storage.Options{NoSync: true}); err != nil {
		return nil, err
	}
	if err = r.db.PutRunInfo(RunInfo(c)); err != nil {
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
// time; a value on stop stops the machines there (Stop: what ran is
// profiled, and Stopped says so). It returns the first stop's signal.
func (r *Run) Wait(stop <-chan os.Signal) (os.Signal, error) {
	ran := make(chan error, len(r.hosts))
	limit := uint64(r.cfg.Seconds * float64(r.cfg.Machine.ClockHz))
	start := time.Now()
	for i := range r.hosts {
		go func(sh *simhost.Host) { ran <- sh.Run(limit) }(r.hosts[i].Sim)
	}
	var runErr error
	for running := len(r.hosts); running > 0; {
		select {
		case err := <-ran:
			running--
			runErr = cmp.Or(runErr, err)
		case s := <-stop:
			r.Stop(s)
		}
	}
	r.Elapsed = time.Since(start)
	return r.Signal(), runErr
}

// Stop stops the machines at their next look at the clock, a program
// waiting for input included, as sig asks; what ran is profiled. Only
// the first call's signal is kept. Any goroutine may call it, before or
// during Wait.
func (r *Run) Stop(sig os.Signal) {
	r.stopMu.Lock()
	defer r.stopMu.Unlock()
	if r.signal != nil {
		return
	}
	r.signal, r.Stopped = sig, true
	if r.stdin != nil {
		r.stdin.Stop()
	}
	for i := range r.hosts {
		r.hosts[i].Sim.Stop()
	}
}

// Signal is the first Stop's signal, nil when none.
func (r *Run) Signal() os.Signal {
	r.stopMu.Lock()
	defer r.stopMu.Unlock()
	return r.signal
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
	r.mu.Lock()
	defer r.mu.Unlock()
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
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.db != nil {
		r.db.Close()
		r.db = nil
	}
	r.removeTemp()
}

// Abort removes what a run that is not committed wrote, for a process
// about to exit with the database still open and the machines perhaps
// still running, and keeps any Commit or Close from running after it: the
// caller exits next. A Commit under way finishes first, and then nothing
// is removed.
func (r *Run) Abort() {
	r.mu.Lock() // never unlocked: the process ends
	r.removeTemp()
}

// removeTemp removes the temporary database unless it was committed;
// twice if need be, as a writer still running may add a file between
// RemoveAll's listing and its removal of the directory.
func (r *Run) removeTemp() {
	if r.committed || r.tmp == "" {
		return
	}
	if os.RemoveAll(r.tmp) != nil { // ours: made by Start, never holds anything else
		os.RemoveAll(r.tmp)
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
