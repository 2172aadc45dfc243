package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"dcpi/hwsim"
	"dcpi/linuxhost/linuxrun"
	"dcpi/simhost"
	"dcpi/simhost/localrun"
)

// profileOptions are dcpi profile's knobs beyond the machine's.
type profileOptions struct {
	localrun.ProfileConfig
	simhost.Features
	ProcLabels map[string]string // --proc-label
	noStacks   bool
	linux      bool
	lx         linuxrun.Config
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
simulated time is stopped there and counts as status 0, with a note.
Ctrl-C, SIGTERM or a closed output pipe stops them too (one waiting for
input included), writes the profile and exits 128+N; a second Ctrl-C
exits at once, the unfinished database removed.

When the programs have exited, dcpi profile prints, on standard error,
the dcpiprof table (procedures by samples), the conservation line (every
sample the simulated hardware generated is stored or counted in a named
drop counter: the two sides must be equal), and where the profile went:
a new profile database, -o (default dcpi-db, where the analysis tools
look by default, so dcpi prof and dcpi list PROCEDURE work with no flags).
The database is written aside and renamed into place when complete,
before dcpi prints anything, so a failed run leaves none half-written and
"| head" loses no profile (SIGKILL alone leaves .NAME.tmp-PID beside it,
which the next run into NAME removes). A database already there is
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
			if o.linux {
				return profileLinux(cmd, o, args)
			}
			cfg, err := loadRoleConfig(cmd)
			if err != nil {
				return err
			}
			pc := o.ProfileConfig
			if err := pc.Setup(cfg, args, localrun.ProfileOptions{Features: o.Features, ProcLabels: o.ProcLabels, NoStacks: o.noStacks,
				CPUsSet: cmd.Flags().Changed("cpus"), ValuesSet: cmd.Flags().Changed("values"), Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()}); err != nil {
				return err
			}
			// A signal stops the machines; the profile of what ran is written
			// (localrun.Profile says how a second one forces).
			sigs := make(chan os.Signal, 4)
			signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE)
			defer signal.Stop(sigs)
			code, err := localrun.Profile(cmd.Context(), cmd.ErrOrStderr(), pc, sigs)
			if err == nil && code != 0 {
				err = exitError{code: code}
			}
			return err
		},
	}
	registerProfileFlags(cmd, &o)
	return cmd
}

// registerProfileFlags registers the flags of the command newProfileCommand makes into o.
func registerProfileFlags(cmd *cobra.Command, o *profileOptions) {
	f := cmd.Flags()
	f.SetInterspersed(false) // flags after PROG belong to the program
	f.StringVarP(&o.Output, "output", "o", "dcpi-db", "write the profile database to `DIR` (an earlier one there becomes DIR.old)")
	f.Int("cpus", 0, "number of simulated CPUs (default: one per simhost.Program)")
	f.Uint64("seed", 1, "seed for everything random on the machine")
	f.String("model", "ev5", "CPU model: ev5 (21164), ev56, pca56, ev6, ev67")
	f.String("sysroot", hwsim.DefaultSysroot, "host `DIR` a dynamically linked program's loader and shared libraries are read from (\"\": none)")
	f.Bool("timing", true, "run the timing model: the 21164's, or the 21264's out-of-order core with --model ev6 or ev67 (false: one cycle per instruction, several times faster)")
	f.String("host", "alpha0", "host name recorded with the samples")
	f.StringToString("label", nil, "the host's label `key=value` the tools select by (config node.labels; docs/node.md)")
	f.StringSlice("per-process", nil, "keep these images' profiles per process: `PATH|NAME|all` (config node.per_process)")
	f.StringToStringVar(&o.ProcLabels, "proc-label", nil, "label `key=value` of the programs' processes and their children, selected by --select, grouped by --by (config node.process_labels; docs/node.md)")
	f.Float64Var(&o.Seconds, "seconds", 0, "stop the programs after this much simulated time (0: when they exit)")
	f.Float64("flush-every", 0.1, "simulated seconds between full drains of the driver tables")
	f.StringSliceVar(&o.Events, "events", []string{"cycles", "imiss"}, "events to count: the first on its own counter (periods 60K-64K for cycles), the rest on a second")
	f.BoolVar(&o.Mux, "mux", false, "the paper's mux configuration: cycles, and imiss, dmiss, branchmp, dtbmiss taking turns")
	f.StringVar(&o.TruthFile, "truth", "", "write per-instruction ground truth (executions, head-of-queue cycles, stalls by cause, events, control transfers, register waits; docs/groundtruth.md) to `FILE`")
	f.IntVar(&o.Limit, "limit", 20, "procedures in the printed table (0: all)")
	f.BoolVar(&o.Stats, "stats", false, "print Table-4-like driver and daemon figures as well")
	f.IntVar(&o.Hosts, "hosts", 1, "run the programs on `N` simulated hosts at once (a fleet in one database)")
	f.BoolVar(&o.Stacks, "stacks", true, "record sampled call stacks beside the flat profile (docs/node.md, \"Call stacks\")")
	f.BoolVar(&o.noStacks, "no-stacks", false, "record no call stacks (--stacks=false): runs about a third faster, half the database")
	f.StringVar(&o.Features.Values, "values", "", "value sampling with customization `MODULE` (loadlat, regvals, semiinv; docs/values.md): interpret a few instructions at each interrupt and keep hot lists")
	f.StringVar(&o.ValuesTruthFile, "values-truth", "", "write value sampling's ground truth (per load its executions by memory level and latency, per instruction its results' and operands' values; docs/groundtruth.md) to `FILE`, for dcpi values --truth")
	f.BoolVar(&o.ProfileMe, "profileme", false, "sample instructions with ProfileMe beside the counters (docs/profileme.md; dcpi me)")
	f.BoolVar(&o.linux, "linux", false, "profile a real command and its children on this Linux machine over perf_event_open (docs/linux.md)")
	f.StringVar(&o.lx.Event, "event", "cpu-clock", "with --linux, the event each CPU samples: cpu-clock, task-clock, or cycles, instructions, cache-misses, branch-misses where a PMU has them")
	f.Uint64Var(&o.lx.Freq, "freq", 999, "with --linux, samples per second per CPU")
	f.BoolVar(&o.MePaired, "me-paired", false, "with --profileme, sample instructions in pairs (ProfileMe sec. 4.2; docs/profileme.md)")
}

// profileLinux is dcpi profile --linux: the flags into linuxrun.Profile.
func profileLinux(cmd *cobra.Command, o profileOptions, args []string) error {
	o.lx.Argv, o.lx.Output, o.lx.Stacks, o.lx.Limit = args, o.Output, o.Stacks, o.Limit
	o.lx.Labels, _ = cmd.Flags().GetStringToString("label")
	if cmd.Flags().Changed("host") {
		o.lx.Host, _ = cmd.Flags().GetString("host")
	}
	o.lx.Stdin, o.lx.Stdout, o.lx.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	code, err := linuxrun.Profile(cmd.Context(), cmd.ErrOrStderr(), o.lx)
	if err == nil && code != 0 {
		err = exitError{code: code}
	}
	return err
}
