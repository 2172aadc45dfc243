package main

import (
	"dcpi/profiledb"
	"fmt"

	"github.com/spf13/cobra"

	"dcpi/analysis/pprofexport"
	"dcpi/analysis/profileme"
	"dcpi/hwsim"
)

// meSubcommands are dcpi me's experiments (figure2, skid, ...).
func meSubcommands() []func() *cobra.Command {
	return []func() *cobra.Command{
		newMeFigure2Command,
		newMeFigure3Command,
		newMeFigure6Command,
		newMeFigure7Command,
		newMeSkidCommand,
	}
}

func newMeCommand() *cobra.Command {
	var opts meOptions
	cmd := &cobra.Command{
		Use:   "me [PROCEDURE]",
		Short: "ProfileMe instruction samples: procedures, or one procedure instruction by instruction",
		Long: `Print what ProfileMe's instruction samples say (nodes record them with
--profileme; docs/profileme.md). Without PROCEDURE, a summary of the
procedures by samples: instructions fetched and retired (estimates),
aborts, the mean cycles an instruction waited at the head of the issue
queue, loads' mean latency, and the most frequent events. With
PROCEDURE, the procedure's line and then one line per sampled
instruction: retires, aborts by an interrupt and by a trap, the mean head
cycles split by stall cause, the mean load latency, and every event seen.

An event seen in k samples of an instruction is estimated at k·S, S the
hardware's mean sampling interval (--interval, the simulated hardware's
default unless the nodes were run with another), with a relative error of
1/sqrt(k) printed beside it (the ProfileMe paper, sec. 5.1): an estimate
from 4 samples is ±50%, from 100 ±10%. Means of latencies need no S.

With paired samples (nodes run with --me-paired), every line also gives
the issue slots wasted while the instruction was in progress (sec.
5.2.3): L·C·S/2 - U·W·S, L the paired samples' fetch-to-ready-to-retire
cycles, U those whose partner issued while the instruction was in
progress and then retired, C the issue width (--issue-width) and W the
pair window (--pair-window); the summary is then ranked by wasted slots.
A listing gives each instruction's aborts by reason (interrupt, trap,
squashed) and, on the 21264, its mean Table 1 stage latencies.

The filters are dcpi prof's (--event is ignored: a ProfileMe sample is of
an instruction, not of an event). --json prints the report:
{"interval", "samples", "listing", "procedures": [{"procedure", "image",
"fetched", "retired", "abort_interrupt", "abort_trap", "events",
"mean_head_cycles", "mean_stall_cycles", "mean_load_latency",
"instructions": [...]}]}, each estimate {"samples", "estimate",
"rel_error"}.

--pprof FILE exports the selection for go tool pprof instead: one
location per sampled instruction (with source lines when the image file
is found, as dcpi pprof finds it) and the sample types fetched (the
default), retired, abort_interrupt, abort_trap, the events (taken,
mispredict, imiss, itbmiss, dmiss, dtbmiss, smiss, bmiss, wbfull), each
k·S, then head_cycles and load_latency (cycles: the samples' sums times
S) and samples (k). Period is S.

--paths lists the hot paths instead: each sample's path-history bits
(the directions of the conditional branches fetched before it; the
nodes keep (PC, history) counts) select the path segments that could
have led to it, walking back through the control-flow graphs until the
segment includes that many conditional branches or reaches the
procedure's entry, through callees on the way (analysis/mepaths;
docs/profileme.md); a sample whose candidates come down to one path
counts for that path. --history-bits sets how many bits
to use; the image files are found as dcpi list finds them.

--addrs PROCEDURE (or --addrs 0xADDRESS) lists, per instruction, the hot
effective addresses of its loads and stores (or an indirect jump's
targets): the nodes keep a Gibbons-Matias hot list per instruction
(internal/hotlist), merged unbiased across CPUs, hosts and epochs, read
from a database (--db) or a cluster (--nats) with the shared filters.`,
		Example: `  dcpi profile --profileme -o /tmp/me.db sort
  dcpi me --db /tmp/me.db
  dcpi me --db /tmp/me.db --image sort main
  dcpi me --db /tmp/me.db --json --limit 5
  dcpi me --db /tmp/me.db --paths --limit 10
  dcpi me --db /tmp/me.db --addrs sift --limit 4
  dcpi me --nats nats://127.0.0.1:4222 --host alpha0 --addrs 0x120000e0c
  dcpi me --db /tmp/me.db --pprof me.pb.gz && go tool pprof -sample_index=dmiss -top me.pb.gz`,
		Args: cobra.MaximumNArgs(1),
		RunE: opts.run,
	}
	opts.register(cmd)
	return cmd
}

// meOptions are the flags of the command newMeCommand makes.
type meOptions struct {
	qf       queryFlags
	interval float64
	limit    int
	pprofOut string
	dirs     []string
	window   float64
	width    float64
	paths    bool
	bits     int
	addrs    string
}

func (opts *meOptions) run(cmd *cobra.Command, args []string) error {
	mo := profileme.Options{Interval: opts.interval, Limit: opts.limit, PairWindow: opts.window, IssueWidth: opts.width,
		Paths: opts.paths, Bits: opts.bits, Addrs: opts.addrs}
	if len(args) == 1 {
		mo.Procedure = args[0]
	}
	if err := mo.Check(); err != nil {
		return err
	}
	sel, err := opts.qf.selection()
	if err != nil {
		return err
	}
	o, err := opts.qf.open(cmd, "dcpi-me", &sel)
	if err != nil {
		return err
	}
	defer o.close()
	mo.Filter, mo.ImagePaths, mo.Files, mo.Where = sel.Filter, sel.ImagePaths, newImageFinder(nil, o, opts.dirs), o.Where()
	if ri, ok := profiledb.RunInfoOf(o.DB); ok && ri.MeInterval > 0 { // the profile's S and W, unless given
		mo.Interval = map[bool]float64{false: ri.MeInterval, true: mo.Interval}[cmd.Flags().Changed("interval")]
		mo.PairWindow = map[bool]float64{false: ri.MePairWindow, true: mo.PairWindow}[cmd.Flags().Changed("pair-window")]
	}
	if opts.pprofOut != "" {
		return writeMePprof(cmd, o, mo, opts.pprofOut)
	}
	mo.Hint = func() string { return o.selectionHint(cmd.Context(), sel) }
	out, err := profileme.Run(cmd.Context(), o.src, o.DB, mo)
	if err != nil {
		return err
	}
	return emit(cmd, opts.qf.json, out)
}

func (opts *meOptions) register(cmd *cobra.Command) {
	for _, add := range meSubcommands() {
		cmd.AddCommand(add())
	}
	f := cmd.Flags()
	opts.qf.register(f, "ignored (ProfileMe samples are of instructions, not events)")
	f.Float64Var(&opts.interval, "interval", hwsim.DefaultProfileMe().MeanInterval(), "`S`, the mean fetched instructions per ProfileMe sample (default: the profile's, when dcpi profile recorded it)")
	f.IntVar(&opts.limit, "limit", 20, "procedures in the summary (0: all)")
	f.Float64Var(&opts.window, "pair-window", float64(hwsim.DefaultPairWindow(true)), "`W`, the pair window the nodes sampled pairs in (default: the profile's, when dcpi profile recorded it; hwsim's: 128 on the 21264, 16 on the 21164)")
	f.Float64Var(&opts.width, "issue-width", 4, "`C`, issue slots per cycle, for wasted slots (4 on the 21264)")
	f.StringVar(&opts.pprofOut, "pprof", "", "write the selected samples as a gzip'd pprof profile to `FILE` (- for standard output) instead of a report")
	f.StringSliceVar(&opts.dirs, "image-dir", nil, "with --pprof or --paths, directories to look for image files in")
	f.BoolVar(&opts.paths, "paths", false, "list the hot paths reconstructed from the samples' path-history bits (ProfileMe sec. 5.3) instead")
	f.IntVar(&opts.bits, "history-bits", 11, "with --paths, the history bits to use (1 to 16)")
	f.StringVar(&opts.addrs, "addrs", "", "list the hot effective addresses (or jump targets) of a procedure's instructions, or of the instruction at an address (0x...), instead")
}

// writeMePprof writes the ProfileMe samples mo selects as a pprof
// profile to out (- for standard output), and a one-line summary.
func writeMePprof(cmd *cobra.Command, o *openedSource, mo profileme.Options, out string) error {
	ex, err := pprofexport.ExportProfileMe(cmd.Context(), o.src, o.DB, pprofexport.ProfileMeQuery{Filter: mo.Filter, ImagePaths: mo.ImagePaths,
		Interval: mo.Interval, Files: mo.Files})
	if err != nil {
		return err
	}
	summary, err := pprofexport.Save(ex.Profile, out, cmd.OutOrStdout(), cmd.ErrOrStderr())
	if err != nil {
		return fmt.Errorf("--pprof: %w", err)
	}
	return ex.WriteSummary(summary, out)
}
