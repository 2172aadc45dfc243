package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"dcpi/analysis/pprofexport"
	"dcpi/analysis/profileme"
	"dcpi/hwsim"
	"dcpi/profiledb"
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
	if opts.limit < 0 {
		return fmt.Errorf("--limit %d: want 0 (all) or more", opts.limit)
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
	if opts.pprofOut != "" {
		return writeMePprof(cmd, o, sel, opts.interval, opts.pprofOut, opts.dirs)
	}
	if opts.addrs != "" {
		return writeMeAddrs(cmd, o, sel, opts.addrs, opts.interval, opts.limit, opts.qf.json)
	}
	if opts.paths {
		return writeMePaths(cmd, o, sel, args, opts.interval, opts.bits, opts.limit, opts.dirs, opts.qf.json)
	}
	q := profileme.Query{Filter: sel.Filter, ImagePaths: sel.ImagePaths, Interval: opts.interval, Limit: opts.limit,
		PairWindow: opts.window, IssueWidth: opts.width}
	q.Filter.Events = nil
	if len(args) == 1 {
		q.Procedure = args[0]
	}
	rep, err := profileme.Profile(cmd.Context(), o.src, o.DB, q)
	if err != nil {
		return err
	}
	if len(rep.Procs) == 0 {
		what := "no ProfileMe samples selected"
		if q.Procedure != "" {
			what = fmt.Sprintf("no ProfileMe samples in procedure %s", q.Procedure)
		}
		if h := o.selectionHint(cmd.Context(), sel); h != "" {
			return fmt.Errorf("%s: %s", what, h)
		}
		return fmt.Errorf("%s (were the nodes run with --profileme?)", what)
	}
	if opts.qf.json {
		return writeJSON(cmd.OutOrStdout(), rep)
	}
	return profileme.Write(cmd.OutOrStdout(), rep)
}

func (opts *meOptions) register(cmd *cobra.Command) {
	for _, add := range meSubcommands() {
		cmd.AddCommand(add())
	}
	f := cmd.Flags()
	opts.qf.register(f, "ignored (ProfileMe samples are of instructions, not events)")
	f.Float64Var(&opts.interval, "interval", hwsim.DefaultProfileMe().MeanInterval(), "`S`, the mean fetched instructions per ProfileMe sample")
	f.IntVar(&opts.limit, "limit", 20, "procedures in the summary (0: all)")
	f.Float64Var(&opts.window, "pair-window", float64(hwsim.DefaultPairWindow(true)), "`W`, the pair window the nodes sampled pairs in (hwsim's default: 128 on the 21264, 16 on the 21164)")
	f.Float64Var(&opts.width, "issue-width", 4, "`C`, issue slots per cycle, for wasted slots (4 on the 21264)")
	f.StringVar(&opts.pprofOut, "pprof", "", "write the selected samples as a gzip'd pprof profile to `FILE` (- for standard output) instead of a report")
	f.StringSliceVar(&opts.dirs, "image-dir", nil, "with --pprof or --paths, directories to look for image files in")
	f.BoolVar(&opts.paths, "paths", false, "list the hot paths reconstructed from the samples' path-history bits (ProfileMe sec. 5.3) instead")
	f.IntVar(&opts.bits, "history-bits", 11, "with --paths, the history bits to use (1 to 16)")
	f.StringVar(&opts.addrs, "addrs", "", "list the hot effective addresses (or jump targets) of a procedure's instructions, or of the instruction at an address (0x...), instead")
}

// errPairedNeedsProfileMe refuses --me-paired alone.
var errPairedNeedsProfileMe = errors.New("--me-paired needs --profileme: pairs are ProfileMe samples")

// writeMeAddrs prints the hot effective addresses of target's
// instructions.
func writeMeAddrs(cmd *cobra.Command, o *openedSource, sel profiledb.Selection, target string, interval float64, limit int, asJSON bool) error {
	as, ok := any(o.DB).(profileme.AddrSource)
	if !ok {
		return fmt.Errorf("--addrs: %s does not serve ProfileMe address lists", o.Where())
	}
	ins, err := profileme.Addresses(cmd.Context(), o.src, as, profileme.AddrQuery{Filter: sel.Filter, ImagePaths: sel.ImagePaths, Target: target, Interval: interval, Limit: limit})
	if err != nil {
		return err
	}
	if len(ins) == 0 {
		return fmt.Errorf("--addrs %s: no ProfileMe address lists selected", target)
	}
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), ins)
	}
	return profileme.WriteAddresses(cmd.OutOrStdout(), ins, interval)
}

// writeMePaths prints the hot paths the selection's history counts
// reconstruct.
func writeMePaths(cmd *cobra.Command, o *openedSource, sel profiledb.Selection, args []string, interval float64, bits, limit int, dirs []string, asJSON bool) error {
	hs, ok := any(o.DB).(profileme.HistorySource)
	if !ok {
		return fmt.Errorf("--paths: %s keeps no ProfileMe path history", o.Where())
	}
	q := profileme.PathQuery{Filter: sel.Filter, ImagePaths: sel.ImagePaths, Bits: bits, Interval: interval, Limit: limit,
		Files: newImageFinder(nil, o, dirs)}
	if len(args) == 1 {
		q.Procedure = args[0]
	}
	rep, err := profileme.Paths(cmd.Context(), o.src, hs, q)
	if err != nil {
		return err
	}
	if rep.Samples == 0 {
		return fmt.Errorf("no ProfileMe path history selected (were the nodes run with --profileme, by a build that keeps it?)")
	}
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), rep)
	}
	return profileme.WritePaths(cmd.OutOrStdout(), rep)
}

// writeMePprof writes the ProfileMe samples sel selects as a pprof
// profile to out, and a one-line summary.
func writeMePprof(cmd *cobra.Command, o *openedSource, sel profiledb.Selection, interval float64, out string, dirs []string) error {
	p, err := pprofexport.ProfileMe(cmd.Context(), o.src, o.DB, pprofexport.ProfileMeQuery{Filter: sel.Filter, ImagePaths: sel.ImagePaths,
		Interval: interval, Files: newImageFinder(nil, o, dirs)})
	if err != nil {
		return err
	}
	if len(p.Sample) == 0 {
		return fmt.Errorf("no ProfileMe samples selected (were the nodes run with --profileme?)")
	}
	w, summary := cmd.OutOrStdout(), cmd.OutOrStdout()
	var fh *os.File
	if out != "-" {
		if fh, err = os.Create(out); err != nil {
			return fmt.Errorf("--pprof: %w", err)
		}
		defer fh.Close()
		w = fh
	} else {
		summary = cmd.ErrOrStderr()
	}
	if err := p.Write(w); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if fh != nil {
		if err := fh.Close(); err != nil {
			return fmt.Errorf("write %s: %w", out, err)
		}
	}
	fmt.Fprintf(summary, "wrote %s: %d sampled instructions in %d images, %d sample types (default fetched; S = %.0f)\n",
		out, len(p.Sample), len(p.Mapping), len(p.SampleType), interval)
	return nil
}
