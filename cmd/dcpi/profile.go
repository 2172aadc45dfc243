package main

import (
	"cmp"
	"dcpi/conservation"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"dcpi/analysis"
	"dcpi/hwsim"
	"dcpi/node"
	"dcpi/simhost"
	"dcpi/storage"
	"dcpi/wire"
)

// profileOptions are dcpi profile's knobs beyond the machine's.
type profileOptions struct {
	output    string
	seconds   float64
	events    []string
	mux       bool
	truthFile string
	// valuesTruthFile receives value sampling's ground truth
	// (hwsim.EncodeValueTruth).
	valuesTruthFile string
	limit           int
	stats           bool
	hosts           int
	stacks          bool
	values          string // value-sampling module ("": off)
	profileMe       bool
	mePaired        bool
}

func newProfileCommand() *cobra.Command {
	var o profileOptions
	cmd := &cobra.Command{
		Use:   "profile [flags] [--] PROG [ARGS...] [: PROG [ARGS...]]...",
		Short: "Run your Alpha program under DCPI, write its profile, print where the cycles went",
		Long: `Run a program on a simulated Alpha host with DCPI's driver and daemon, as
perf record runs one under Linux: PROG is a static Alpha Linux ELF
executable (alpha-linux-gnu-gcc -O2 -g -static -mcpu=ev5 -Wl,--no-relax),
or the name of an embedded workload. Several programs separated by a lone
: run at once on a multiprocessor host, one CPU each unless --cpus says
otherwise. Flags go before PROG; everything after it is the program's.

The programs' standard input, output and error are passed through, and
dcpi exits with the program's exit status (128+N if signal N killed it; the
first nonzero status of several). A program still running at --seconds of
simulated time is stopped there and counts as status 0, with a note; so
does one stopped by an interrupt (Ctrl-C), whose profile is written too.

When the programs have exited, dcpi profile prints, on standard error,
the dcpiprof table (procedures by samples), the conservation line (every
sample the simulated hardware generated is stored or counted in a named
drop counter: the two sides must be equal), and where the profile went:
a new profile database, -o (default dcpi-db, where the analysis tools
look by default, so dcpi prof and dcpi list PROCEDURE work with no flags).
The database is written aside and renamed into place only when complete,
so a failed run leaves none half-written. A database already there is
kept as NAME.old (an older NAME.old is removed), as perf keeps
perf.data.old; anything else there that is not a dcpi profile database
is refused.

Your program is recorded under its absolute path: dcpi list finds the
file there later, and refuses it if it was rebuilt since (another build
ID); --image-dir gives other places to look.

--hosts N runs the same programs on N simulated hosts at once, a small
fleet in one database: the hosts are named after --host with its trailing
digits replaced by 0..N-1 (alpha0 ... alpha7), host i runs with --seed
plus i (its own sampling periods, page placement and scheduling), and
only the first host's programs read standard input and write to standard
output and error. The analysis tools see one image profiled on N hosts
and sum its samples (dcpi calc's fleet-wide estimate); --truth then
writes the ground truth of all the hosts summed per instruction.`,
		Example: `  alpha-linux-gnu-gcc -O2 -g -static -mcpu=ev5 -Wl,--no-relax my.c -o my
  dcpi profile -- ./my 1000
  dcpi list main
  dcpi profile -o before.db --cpus 2 -- ./my : ./my --other-input
  dcpi profile --mux --seconds 2 --truth truth.txt -- ./server --port 9
  dcpi profile sort
  dcpi profile --hosts 8 -o fleet.db --truth fleet-truth.txt -- stream`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("name the program to profile: dcpi profile -- ./prog ARGS")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			progs, err := simhost.SplitPrograms(args)
			if err != nil {
				return err
			}
			cfg, err := loadRoleConfig(cmd)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("cpus") {
				cfg.Sim.CPUs = min(len(progs), 64)
			}
			hc, err := simhost.MachineConfig(cfg.Sim)
			if err != nil {
				return err
			}
			hc.Stdin, hc.Stdout, hc.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			hc.GroundTruth = o.truthFile != "" || o.valuesTruthFile != ""
			simhost.InstallPrograms(&hc, progs)
			o.seconds = cfg.Node.Seconds
			ncfg := simhost.DefaultConfig()
			ncfg.Node.Host = cfg.Sim.Hostname
			if o.stacks {
				if err := checkStacks(); err != nil {
					return err
				}
				ncfg.Node.Driver.Stacks = node.DefaultStackConfig()
			}
			if o.mePaired && !o.profileMe {
				return errPairedNeedsProfileMe
			}
			if o.profileMe {
				ncfg.Node.Driver.Me = node.DefaultMeConfig()
				ncfg.ProfileMe = simhost.ProfileMeHardware(o.mePaired)
			}
			ncfg.FlushEvery = uint64(cfg.Node.FlushEvery * float64(hc.ClockHz))
			if err := setValues(cmd, &ncfg, cfg.Node.Values, &o); err != nil {
				return err
			}
			if ncfg.Profile, err = simhost.CounterProfile(o.events, o.mux); err != nil {
				return err
			}
			return runProfile(cmd.ErrOrStderr(), hc, ncfg, progs, o)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // flags after PROG belong to the program
	f.StringVarP(&o.output, "output", "o", "dcpi-db", "write the profile database to `DIR` (an earlier one there becomes DIR.old)")
	f.Int("cpus", 0, "number of simulated CPUs (default: one per simhost.Program)")
	f.Uint64("seed", 1, "seed for everything random on the machine")
	f.String("model", "ev5", "CPU model: ev5 (21164), ev56, pca56, ev6, ev67")
	f.Bool("timing", true, "run the timing model: the 21164's, or the 21264's out-of-order core with --model ev6 or ev67 (false: one cycle per instruction, several times faster)")
	f.String("host", "alpha0", "host name recorded with the samples")
	f.Float64Var(&o.seconds, "seconds", 0, "stop the programs after this much simulated time (0: when they exit)")
	f.Float64("flush-every", 0.1, "simulated seconds between full drains of the driver tables")
	f.StringSliceVar(&o.events, "events", []string{"cycles", "imiss"}, "events to count: the first on its own counter (periods 60K-64K for cycles), the rest on a second")
	f.BoolVar(&o.mux, "mux", false, "the paper's mux configuration: cycles, and imiss, dmiss, branchmp, dtbmiss taking turns")
	f.StringVar(&o.truthFile, "truth", "", "write per-instruction ground truth (executions, head-of-queue cycles, stalls by cause, events, control transfers, register waits; docs/groundtruth.md) to `FILE`")
	f.IntVar(&o.limit, "limit", 20, "procedures in the printed table (0: all)")
	f.BoolVar(&o.stats, "stats", false, "print Table-4-like driver and daemon figures as well")
	f.IntVar(&o.hosts, "hosts", 1, "run the programs on `N` simulated hosts at once (a fleet in one database)")
	f.BoolVar(&o.stacks, "stacks", false, "record sampled call stacks beside the flat profile (docs/node.md, \"Call stacks\")")
	f.StringVar(&o.values, "values", "", "value sampling with customization `MODULE` (loadlat, regvals, semiinv; docs/values.md): interpret a few instructions at each interrupt and keep hot lists")
	f.StringVar(&o.valuesTruthFile, "values-truth", "", "write value sampling's ground truth (per load its executions by memory level and latency, per instruction its results' and operands' values; docs/groundtruth.md) to `FILE`, for dcpi values --truth")
	f.BoolVar(&o.profileMe, "profileme", false, "sample instructions with ProfileMe beside the counters (docs/profileme.md; dcpi me)")
	f.BoolVar(&o.mePaired, "me-paired", false, "with --profileme, sample instructions in pairs (ProfileMe sec. 4.2; docs/profileme.md)")
	return cmd
}

// runProfile runs the programs under a node writing into a new database
// beside o.output, prints the profile and conservation, puts the database
// in place, and returns the programs' exit status as an exitError.
func runProfile(w io.Writer, hc hwsim.Config, ncfg simhost.Config, progs []simhost.Program, o profileOptions) error {
	out := filepath.Clean(o.output)
	existing, err := checkProfileOutput(out)
	if err != nil {
		return err
	}
	if o.hosts < 1 || o.hosts > maxProfileHosts {
		return fmt.Errorf("--hosts %d: want 1 to %d", o.hosts, maxProfileHosts)
	}
	names, err := fleetHostNames(ncfg.Node.Host, o.hosts)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return fmt.Errorf("-o %s: %w", out, err)
	}
	committed := false
	defer func() {
		if !committed {
			os.RemoveAll(tmp) // ours: created above, never holds anything else
		}
	}()
	db, err := storage.Open(tmp, storage.Options{NoSync: true})
	if err != nil {
		return err
	}
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	sink := simhost.LocalSink{DB: db}
	env := []string{"PATH=/bin", "HOME=/", "TERM=dumb", "LANG=C"}
	hosts := make([]profiledHost, len(names))
	for i, name := range names {
		h := &hosts[i]
		hci, nci := hc, ncfg
		hci.Seed, hci.Hostname, nci.Node.Host = hc.Seed+uint64(i), name, name
		if i > 0 {
			// One host's programs talk to the terminal; the rest of the
			// fleet runs them with no input and output discarded.
			hci.Stdin, hci.Stdout, hci.Stderr = strings.NewReader(""), io.Discard, io.Discard
		}
		if h.m, err = hwsim.New(hci); err != nil {
			return err
		}
		// The node record says how many events a sample stands for, for
		// dcpi pprof's estimated counts.
		if err := sink.Register(name, hci.CPUs, nci.Profile, time.Now()); err != nil {
			return err
		}
		if h.sh, err = simhost.New(h.m, nci, sink); err != nil {
			return err
		}
		h.procs = make([]*hwsim.Process, len(progs))
		for j, p := range progs {
			if h.procs[j], err = h.m.Spawn(p.Path, p.Argv, env); err != nil {
				return fmt.Errorf("run %s: %w", p.Given, err)
			}
		}
	}

	// An interrupt stops the machines; the profile of what ran is written.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ran := make(chan error, len(hosts))
	limit := uint64(o.seconds * float64(hc.ClockHz))
	start := time.Now()
	for i := range hosts {
		go func(sh *simhost.Host) { ran <- sh.Run(limit) }(hosts[i].sh)
	}
	var interrupted os.Signal
	var runErr error
	for running := len(hosts); running > 0; {
		select {
		case err := <-ran:
			running--
			runErr = cmp.Or(runErr, err)
		case s := <-sigs:
			if interrupted == nil {
				interrupted = s
				for i := range hosts {
					hosts[i].sh.Stop()
				}
			}
		}
	}
	if runErr != nil {
		return runErr
	}
	elapsed := time.Since(start)

	var ranFor float64 // seconds, simulated: the longest host's
	var generated uint64
	v := views{stacks: o.stacks, me: o.profileMe}
	for i := range hosts {
		ranFor = max(ranFor, float64(hosts[i].sh.SimCycles())/float64(hc.ClockHz))
		generated += hosts[i].sh.Generated()
		v.meTagged += hosts[i].sh.MeTagged()
	}
	status := 0
	for _, h := range hosts {
		for i, p := range h.procs {
			if p.State() < hwsim.ProcZombie {
				why := fmt.Sprintf("the --seconds %g limit", o.seconds)
				if interrupted != nil {
					why = "the interrupt"
				}
				on := ""
				if len(hosts) > 1 {
					on = " on " + h.m.Config().Hostname
				}
				fmt.Fprintf(w, "note: %s%s was still running at %s (%.3f simulated s); stopped it there\n", progs[i].Given, on, why, float64(h.sh.SimCycles())/float64(hc.ClockHz))
				continue
			}
			if status == 0 {
				status = exitCode(p.ExitStatus())
			}
		}
	}
	if o.truthFile != "" {
		machines := make([]*hwsim.Machine, len(hosts))
		for i := range hosts {
			machines[i] = hosts[i].m
		}
		if err := writeTruth(machines, o.truthFile); err != nil {
			return err
		}
	}
	if o.valuesTruthFile != "" {
		if err := writeValuesTruth(hostMachines(hosts), o.valuesTruthFile); err != nil {
			return err
		}
	}
	if o.stats {
		for _, h := range hosts {
			if len(hosts) > 1 {
				fmt.Fprintf(w, "\n%s:\n", h.m.Config().Hostname)
			}
			printNodeStats(w, h.sh, elapsed)
		}
	}
	table, err := analysis.Prof(analysis.NewSymbolizer(db), analysis.ProfQuery{Limit: o.limit})
	if err != nil {
		return err
	}
	on := fmt.Sprintf("%d CPU%s", hc.CPUs, plural(hc.CPUs))
	if len(hosts) > 1 {
		on = fmt.Sprintf("%d hosts (%s to %s) of %s", len(hosts), names[0], names[len(names)-1], on)
	}
	fmt.Fprintf(w, "\ndcpi profile: %s on %s, %.3f simulated s\n\n", simhost.ProgramCommands(progs), on, ranFor)
	if err := analysis.WriteText(w, table); err != nil {
		return err
	}
	balanced, err := printConservation(w, db, generated, storage.Query{}, totals{}, v)
	if err != nil {
		return err
	}
	if !balanced {
		return errors.New("conservation does not balance: samples were lost without a drop counter")
	}
	if o.values != "" {
		if err := printValueConservation(w, db, hostMachines(hosts)); err != nil {
			return err
		}
	}
	err = db.Close()
	db = nil
	if err != nil {
		return fmt.Errorf("closing the profile database: %w", err)
	}
	if err := commitProfile(tmp, out, existing); err != nil {
		return err
	}
	committed = true
	fmt.Fprintf(w, "profile written to %s", out)
	if existing == outputDatabase {
		fmt.Fprintf(w, " (the previous one is now %s.old)", out)
	}
	db1 := ""
	if out != "dcpi-db" {
		db1 = " --db " + shellQuote(out)
	}
	fmt.Fprintf(w, "; see it with dcpi prof%s, dcpi list%s PROCEDURE\n", db1, db1)
	if interrupted != nil {
		if sig, ok := interrupted.(syscall.Signal); ok {
			return exitError{code: 128 + int(sig)}
		}
	}
	if status != 0 {
		return exitError{code: status}
	}
	return nil
}

// outputState is what is at a profile's output path.
type outputState int

const (
	outputNone     outputState = iota // nothing
	outputEmptyDir                    // an empty directory
	outputDatabase                    // a dcpi profile database
)

// checkProfileOutput says what is at out and whether dcpi profile may put
// a new database there; it refuses anything but nothing, an empty
// directory, or a dcpi profile database (whose place it takes, it kept as
// out.old, which must itself be nothing or a dcpi profile database).
func checkProfileOutput(out string) (outputState, error) {
	state, err := outputAt(out)
	if err != nil {
		return 0, fmt.Errorf("-o %s: %w; choose another name or move it away", out, err)
	}
	if state == outputDatabase {
		if _, err := outputAt(out + ".old"); err != nil {
			return 0, fmt.Errorf("-o %s: the previous profile would become %s.old, but that %w; move it away", out, out, err)
		}
	}
	return state, nil
}

var errNotProfileDB = errors.New("is not a dcpi profile database")

// outputAt classifies what is at path, refusing what dcpi profile must
// not replace.
func outputAt(path string) (outputState, error) {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return outputNone, nil
	case err != nil:
		return 0, err
	case !st.IsDir():
		return 0, fmt.Errorf("exists and %w (a file)", errNotProfileDB)
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return 0, err
	}
	if len(ents) == 0 {
		return outputEmptyDir, nil
	}
	// Pebble keeps MANIFEST-NNNNNN files; look before opening, as an
	// open could leave a lock file in someone else's directory.
	if !slices.ContainsFunc(ents, func(e fs.DirEntry) bool { return strings.HasPrefix(e.Name(), "MANIFEST-") }) {
		return 0, fmt.Errorf("is a directory that %w", errNotProfileDB)
	}
	db, err := storage.Open(path, storage.Options{ReadOnly: true})
	if err != nil {
		return 0, fmt.Errorf("is a database dcpi cannot read (%v), so it %w", err, errNotProfileDB)
	}
	db.Close()
	return outputDatabase, nil
}

// commitProfile puts the finished database tmp at out: a database there
// becomes out.old (replacing an older one, which checkProfileOutput found
// to be a profile database or nothing).
func commitProfile(tmp, out string, existing outputState) error {
	switch existing {
	case outputEmptyDir:
		if err := os.Remove(out); err != nil {
			return fmt.Errorf("-o %s: %w", out, err)
		}
	case outputDatabase:
		old := out + ".old"
		state, err := outputAt(old)
		if err != nil {
			return fmt.Errorf("-o %s: %s %w", out, old, err)
		}
		if state != outputNone {
			if err := os.RemoveAll(old); err != nil {
				return fmt.Errorf("-o %s: removing the older %s: %w", out, old, err)
			}
		}
		if err := os.Rename(out, old); err != nil {
			return fmt.Errorf("-o %s: keeping the previous profile: %w", out, err)
		}
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("-o %s: %w", out, err)
	}
	return nil
}

// totals is what a database held of samples and drops.
type totals struct {
	stored uint64
	drops  map[string]uint64
	// The stack view: samples counted by stacks, and stack drops.
	stackStored uint64
	stackDrops  map[string]uint64
	// The ProfileMe view: samples stored (in entries and unknown), and
	// ProfileMe drops.
	meStored uint64
	meDrops  map[string]uint64
}

func dbTotals(db *storage.DB, q storage.Query) (totals, error) {
	s, u, d, err := db.Totals(q)
	if err != nil {
		return totals{}, err
	}
	ss, sd, err := db.StackTotals(q)
	if err != nil {
		return totals{}, err
	}
	ms, mu, md, err := db.MeTotals(q)
	return totals{stored: s + u, drops: d, stackStored: ss, stackDrops: sd, meStored: ms + mu, meDrops: md}, err
}

// views says which conservation lines a run prints beside the flat
// profile's.
type views struct {
	stacks bool
	// me: ProfileMe was on, and the hardware tagged meTagged instructions.
	me       bool
	meTagged uint64
}

// printConservation prints the conservation line of a run: the samples
// the simulated hardware generated against what the run added to db
// (now minus before) in profiles and drop counters. It reports whether
// the two balance exactly. With stacks, a second line does the same for
// the stack view, with ProfileMe a third for the instructions tagged, and
// every line must balance.
func printConservation(w io.Writer, db *storage.DB, generated uint64, q storage.Query, before totals, v views) (bool, error) {
	now, err := dbTotals(db, q)
	if err != nil {
		return false, err
	}
	drops := map[string]uint64{}
	for name, n := range now.drops {
		drops[name] = n - min(before.drops[name], n)
	}
	line, balanced := conservation.SamplesLine(generated, now.stored-before.stored, drops)
	fmt.Fprintf(w, "\n%s\n", line)
	if v.stacks {
		sline, sbalanced := conservation.StacksLine(generated, now.stackStored-min(before.stackStored, now.stackStored), conservation.Since(now.stackDrops, before.stackDrops))
		fmt.Fprintln(w, sline)
		balanced = balanced && sbalanced
	}
	if v.me {
		mline, mbalanced := conservation.ProfileMeLine(v.meTagged, now.meStored-min(before.meStored, now.meStored), conservation.Since(now.meDrops, before.meDrops))
		fmt.Fprintln(w, mline)
		balanced = balanced && mbalanced
	}
	return balanced, nil
}

// maxProfileHosts bounds --hosts: every host is a whole simulated machine
// in this process.
const maxProfileHosts = 64

// profiledHost is one simulated host of a dcpi profile run.
type profiledHost struct {
	m     *hwsim.Machine
	sh    *simhost.Host
	procs []*hwsim.Process
}

// fleetHostNames names n hosts after host: host itself when n is 1, else
// host with its trailing digits replaced by 0..n-1.
func fleetHostNames(host string, n int) ([]string, error) {
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

// writeTruth writes the ground truth of machines, summed per image and
// instruction, to file.
func writeTruth(machines []*hwsim.Machine, file string) error {
	err := writeFileWith(file, func(w io.Writer) error { return hwsim.WriteGroundTruthOf(w, machines...) })
	if err != nil {
		return fmt.Errorf("--truth %s: %w", file, err)
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// shellQuote quotes s for a command line shown to the user when it needs
// it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`&|;<>()*?[]#~!{}") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
