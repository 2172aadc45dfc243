package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"dcpi/analysis/instrument"
	"dcpi/hwsim"
	"dcpi/simhost"
	"dcpi/workloads"
)

func newPPInstrumentCommand() *cobra.Command {
	var (
		mode, out, dump           string
		strict, metrics, ctxPaths bool
		pic                       string
	)
	cmd := &cobra.Command{
		Use:   "instrument [flags] BINARY",
		Short: "Rewrite a static Alpha executable to count its blocks and edges (pixie), paths or calling contexts (cct)",
		Long: `Instrument a static Alpha ELF executable. Chosen original instructions
become a br to a stub in a new segment; the stub counts, runs the displaced
instruction (branches re-encoded, return addresses kept original) and branches
back, so every original address, jump table and symbol stays valid. The
result runs on the simulated host (dcpi sim run, dcpi profile) and on
qemu-alpha with the original's output, and at exit appends its counters to
a dump file (default: the output's base name plus .pp.out, in the working
directory). Read it with dcpi pp counts.

Modes:
  pixie   exact execution counts of every basic block, both edges of every
          conditional branch and every jump-table transfer (DCPI's dcpix)
  paths   Ball-Larus path counts per procedure (PLDI'97 sec. 2; the numbering
          of analysis/paths, as dcpi pp oracle's), the path register kept
          per activation on a path stack; single-threaded programs
          --metrics adds per path its cycles (rpcc) and two hardware events
          (hwsim's rdpic PAL call; --pic names them as dcpi sim run --pic
          configures them), each path's own, callees excluded (sec. 3.1): such a program runs
          on the simulated host only (SIGILL on qemu-alpha)
  cct     the calling context tree (PLDI'97 sec. 4): call records with a call
          count per context, built by the program as it runs in a heap that
          grows with mmap; single-threaded programs
          --metrics adds per context its cycles and two hardware events,
          each record's own, callees excluded (the paper's Context+HW; hwsim
          only, as above); --paths instead counts each procedure's
          Ball-Larus paths in every call record (Context+Flow: paths per
          calling context, on hwsim and qemu-alpha)

Refused, with the reason: a file that is not a static Alpha executable, a
writable text segment, code beyond br's 4 MB reach of the new segment, and
(with --strict) any procedure with an indirect jump the CFG cannot resolve;
without --strict such procedures are left uncounted and listed.

BINARY is a path, or the name of an embedded workload (` + strings.Join(workloads.Names(), ", ") + `).
docs/instrument.md describes the rewriting and the dump format.`,
		Example: `  dcpi pp instrument --mode pixie -o hello.pix hello
  dcpi sim run --cpus 1 ./hello.pix && dcpi pp counts hello.pix
  dcpi pp instrument --mode paths -o sort.paths sort
  dcpi sim run --cpus 1 ./sort.paths 2000 && dcpi pp counts --original sort sort.paths
  dcpi pp instrument --mode paths --metrics -o sort.hw sort
  dcpi sim run --cpus 1 ./sort.hw 2000 && dcpi pp counts sort.hw
  dcpi pp instrument --mode cct -o sort.cct sort
  dcpi sim run --cpus 1 ./sort.cct 2000 && dcpi pp counts --save sort.cct.json sort.cct
  dcpi pp instrument --mode cct --metrics -o ptrchase.cct ptrchase
  dcpi sim run --cpus 1 ./ptrchase.cct 16384 20000 && dcpi pp counts --by dmiss ptrchase.cct
  dcpi pp instrument --mode cct --paths -o sort.cf sort
  dcpi sim run --cpus 1 ./sort.cf 2000 && dcpi pp counts --original sort sort.cf
  qemu-alpha ./hello.pix && dcpi pp counts --top 20 hello.pix hello.pix.pp.out`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, _, err := simhost.ReadELF(args[0])
			if err != nil {
				return err
			}
			opt := instrument.FileOptions{Name: args[0], Output: out, Options: instrument.Options{Mode: mode, DumpPath: dump, Strict: strict, Metrics: metrics, CCTPaths: ctxPaths}}
			if metrics {
				evs, err := hwsim.ParsePICEvents(pic)
				if err != nil {
					return fmt.Errorf("--pic: %w", err)
				}
				opt.PIC = [2]string{evs[0].String(), evs[1].String()}
			}
			res, err := instrument.InstrumentFile(data, opt)
			if err != nil {
				return err
			}
			return res.WriteSummary(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&mode, "mode", instrument.ModePixie, "what to count: pixie, paths or cct")
	cmd.Flags().StringVarP(&out, "output", "o", "", "instrumented file to write (default: BINARY's base name and .MODE)")
	cmd.Flags().StringVar(&dump, "dump", "", "dump file the program appends to at exit, relative to its working directory (default: OUTPUT's base name and .pp.out)")
	cmd.Flags().BoolVar(&strict, "strict", false, "refuse a binary with any procedure the CFG cannot resolve")
	cmd.Flags().BoolVar(&metrics, "metrics", false, "paths and cct modes: per path (context) also cycles and two hardware events (hwsim only; docs/instrument.md)")
	cmd.Flags().BoolVar(&ctxPaths, "paths", false, "cct mode: every call record also counts its procedure's Ball-Larus paths (Context+Flow; not with --metrics)")
	cmd.Flags().StringVar(&pic, "pic", "dmiss,imiss", "with --metrics: the two events `A,B` the program's dcpi sim run --pic counts")
	return cmd
}

func newPPCountsCommand() *cobra.Command {
	var (
		top                int
		original, save, by string
		asJSON             bool
	)
	cmd := &cobra.Command{
		Use:   "counts [flags] INSTRUMENTED [DUMP]",
		Short: "Print the block or path counts of an instrumented program's dump",
		Long: `Read the dump an instrumented program wrote (default: the dump path its
manifest names) with the instrumented binary, and print the most executed
basic blocks: procedure, address, executions, and the block's share of all
counted block executions. Records of every process (forked children, images
before an execve) are summed. A dump written by another binary is refused.

A paths-mode dump prints the most executed Ball-Larus paths (labelled as
the instrumented profile, in dcpi pp oracle's shape), the paths executed per
procedure, and the paths left uncounted (lost to a longjmp, out of range,
stack overflow, unmatched exits, a full hash table). With --original (the
uninstrumented binary or workload name) each hot path shows its blocks and
source lines. --save FILE writes the path profile in the encoding dcpi pp
oracle's profile uses (docs/paths.md), so the two compare directly.

A CCT-mode dump prints the calling context tree the program built (the
processes' trees merged), with its metrics per context (calls; with
--metrics also cycles and two events, each record's own, callees
excluded) and --top children per record, ordered by the inclusive value
of the --by metric (default calls), the paper's Table 3 of it, and the
activations left out (lost to a longjmp, unmatched exits, stack overflow,
an exhausted heap). --save FILE writes the tree with the original image's
ID and its metrics (docs/instrument.md), for dcpi pp upload. A dump of
--mode cct --paths also prints the hottest (context, path) pairs and each
context's paths run; with --original, Table 3's call sites reached by
exactly one path run in their context ("One Path").`,
		Example: `  dcpi pp counts hello.pix
  dcpi pp counts --top 0 hello.pix hello.pix.pp.out`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opt := instrument.CountsOptions{Instrumented: args[0], Top: top, Save: save, By: by, JSON: asJSON}
			if len(args) == 2 {
				opt.Dump = args[1]
			}
			if original != "" {
				opt.Original = func() ([]byte, error) {
					data, _, err := simhost.ReadELF(original)
					return data, err
				}
			}
			return instrument.WriteCounts(cmd.OutOrStdout(), opt)
		},
	}
	cmd.Flags().IntVar(&top, "top", 30, "blocks (paths) to print, most executed first (0: all executed)")
	cmd.Flags().StringVar(&original, "original", "", "paths mode: the uninstrumented binary (or workload name), to show each hot path's blocks")
	cmd.Flags().StringVar(&save, "save", "", "paths mode: write the path profile (docs/paths.md encoding); cct mode: the tree")
	cmd.Flags().BoolVar(&asJSON, "json", false, "paths and cct modes: print the report as JSON")
	cmd.Flags().StringVar(&by, "by", "", "cct mode: the `METRIC` that orders each record's children, by inclusive value (default calls)")
	return cmd
}
