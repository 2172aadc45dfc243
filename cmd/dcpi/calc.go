package main

import (
	"context"

	"github.com/spf13/cobra"

	"dcpi/analysis/calc"
	"dcpi/analysis/imagefind"
	"dcpi/hwsim"
	"dcpi/profiledb"
	"dcpi/simhost"
)

func newCalcCommand() *cobra.Command {
	var opts calcOptions
	cmd := &cobra.Command{
		Use:   "calc [flags] [PROCEDURE...]",
		Short: "Where have all the cycles gone: frequency, CPI and culprits per instruction, DCPI's dcpicalc",
		Long: `Analyze procedures as DCPI's dcpicalc did (sec. 3.2 and 6 of the paper):
from the CYCLES samples alone, factor each instruction's samples into an
execution frequency and a CPI (cycles at the head of the issue queue per
execution), and name the possible culprits of every stall.

Which procedures: the ones named (every image with CYCLES samples in a
procedure of that name; narrow with --image), or --top N, the N with the
most CYCLES samples in the selection as dcpi prof ranks them, or --all,
every procedure with CYCLES samples (with --image: that whole image).
With no name, --top 1: the hottest procedure.

For each procedure it prints (Figure 2 of the paper) a legend of the
bubble letters once, then block by block: the block's frequency F (in
executions per P, P the mean CYCLES period) with its confidence (low,
medium, high) and how it was estimated; "Best-case ΣM/n = CPI", the
static schedule's cycles per execution over the block's n instructions,
with no dynamic stall; "Actual Σ(S/F)/n = CPI", the cycles measured; then
each instruction: address, disassembly, samples S, CPI = S/F ("(dual
issue)" when it issues with the one before, M = 0), and the culprit PCs
(the producer of an awaited register, the load that may have missed, the
instruction holding a pipe). Above a stalled instruction, one line per
half-cycle of its stall, lettered by cause: its static stalls (s slotting,
a Ra and b Rb dependency, e functional unit busy), then its dynamic stall
(CPI - M) with the letter of every cause not ruled out (d D-cache, D DTB,
w write buffer, i I-cache, I ITB, p mispredict, y synchronization, m IMUL,
f FDIV, o other; u when none survives: unexplained); runs longer than 4
lines print as first, "... N.Ncy", last. Source lines come before the
instructions compiled from them when the image has DWARF lines.

Then the procedure's summary (Figure 4): best-case and actual CPI over
the instructions with a frequency, each dynamic cause as a range of the
tallied samples, "x% to y%": x counts the stall cycles of instructions
whose only surviving cause it is, y those of every instruction it is a
candidate for, bounded by its event samples where there are some (IMISS,
DMISS, DTBMISS, ...); unexplained stall (no cause survives) and gain (an
instruction faster than its schedule, negative); the static stalls; total
stall, execution (the cycles to issue with no stall at all), and net
sampling error
(what is left, so that the three tally 100%), and the samples tallied with
their share of all the procedure's samples (those of blocks without a
frequency are not tallied).

Fleet-wide: the samples of the same image on every selected host and in
every selected epoch feed one estimate (DCPI analyzed one run at a time).
Hosts sampling an event with different periods (events per sample, from
the node registry; --period E=N overrides for every host) are scaled to
one common period, their sample-weighted mean, before they are summed.

Images are found as dcpi list finds them (embedded, the recorded path,
--image-dir, the cluster's upload) and refused if their content key is
not the profiled image's. --summary prints only the summaries; --json
the whole report (see docs/dcpicalc.md).

--truth FILE, the ground truth dcpi profile --truth wrote for the same
run, prints an accuracy report over the selected procedures instead
(use --all --image NAME, or --top N): the error of F·P against each
instruction's executions weighted by CYCLES samples (the paper's
Figure 8) and against each CFG edge's executions (Figure 9), the share of
the far-off samples marked low confidence, how often the truth's stall
cycles of each cause lie in the summary's range for it (the culprit
score, with the worst misses), and the unexplained stall. The estimator
never reads the truth: the report compares afterwards.`,
		Example: `  dcpi profile -o /tmp/calc -- stream
  dcpi calc --db /tmp/calc
  dcpi calc --db /tmp/calc --top 3 --summary
  dcpi calc --db /tmp/calc --image stream --all --summary
  dcpi calc --db /tmp/fleet/c1 --host alpha1 --source-dir workloads lap
  dcpi calc --nats nats://127.0.0.1:4222 --label rack=r1 --top 20 --json
  dcpi profile -o /tmp/acc --mux --truth /tmp/acc.truth -- sort 100000
  dcpi calc --db /tmp/acc --image sort --all --truth /tmp/acc.truth`,
		RunE: opts.run,
	}
	opts.register(cmd)
	return cmd
}

// calcOptions are the flags of the command newCalcCommand makes.
type calcOptions struct {
	qf          queryFlags
	top         int
	all         bool
	imageDirs   []string
	sourceDirs  []string
	periodFlags []string
	isolated    bool
	summary     bool
	truthFile   string
}

func (opts *calcOptions) run(cmd *cobra.Command, args []string) error {
	co := calc.Options{Query: calc.Query{Procedures: args, Top: opts.top, All: opts.all}, TopGiven: cmd.Flags().Changed("top"),
		Summary: opts.summary, TruthFile: opts.truthFile}
	if err := co.Check(); err != nil {
		return err
	}
	var err error
	if opts.truthFile != "" {
		// Read before the analysis so that a bad file fails fast;
		// the estimator never sees it (calc.CompareReport runs after).
		if co.Truth, err = simhost.ReadGroundTruthFile(opts.truthFile); err != nil {
			return err
		}
	}
	sel, err := opts.qf.selection()
	if err != nil {
		return err
	}
	if err := calc.CheckEvents(sel.Events); err != nil {
		return err
	}
	o, err := opts.qf.open(cmd, "dcpi-calc", &sel)
	if err != nil {
		return err
	}
	defer o.close()
	co.Filter, co.ImagePaths, co.Static.Isolated = sel.Filter, sel.ImagePaths, opts.isolated
	co.Files, co.Source = newImageFinder(cmd.ErrOrStderr(), o, opts.imageDirs), imagefind.SourceReader(opts.sourceDirs)
	co.ReadPeriods = func(ctx context.Context) (map[string]map[uint8]float64, error) {
		if err := profiledb.RefuseOutOfOrder(ctx, o.DB, sel.Filter.Hosts); err != nil {
			return nil, err
		}
		return profiledb.CalcPeriods(ctx, o.DB, sel.Filter.Hosts, opts.periodFlags, cmd.ErrOrStderr())
	}
	co.Me, co.MeInterval, co.Values = o.DB, profiledb.MeIntervalOf(o.DB, hwsim.DefaultProfileMe().MeanInterval()), o.DB
	co.Hint = func() string { return o.selectionHint(cmd.Context(), sel) }
	out, err := calc.Analyze(cmd.Context(), o.src, co)
	if err != nil {
		return err
	}
	return emit(cmd, opts.qf.json, out)
}

func (opts *calcOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	opts.qf.register(f, "not for calc: it reads every event")
	f.IntVar(&opts.top, "top", 1, "analyze the `N` procedures with the most cycles samples (the default when no procedure is named)")
	f.BoolVar(&opts.all, "all", false, "analyze every procedure with cycles samples in the selection (with --image: a whole image)")
	f.StringArrayVar(&opts.imageDirs, "image-dir", nil, "look for image files under `DIR` too (repeatable)")
	f.StringArrayVar(&opts.sourceDirs, "source-dir", nil, "look for source files under `DIR` (repeatable)")
	f.StringArrayVar(&opts.periodFlags, "period", nil, "event `E=N`: E's mean sampling period on every host, N events per sample (repeatable; default: the hosts' registered periods)")
	f.BoolVar(&opts.isolated, "isolated", false, "schedule every block from an empty pipeline, as DCPI did (default: after its only predecessor block)")
	f.BoolVar(&opts.summary, "summary", false, "print only each procedure's summary (Figure 4)")
	f.StringVar(&opts.truthFile, "truth", "", "instead of the listing, hold the estimates to the ground truth `FILE` of dcpi profile --truth (docs/dcpicalc.md, Accuracy)")
}
