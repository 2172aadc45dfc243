package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"dcpi/analysis"
	"dcpi/analysis/imagefind"
	"dcpi/analysis/report"
	"dcpi/profiledb"
)

func newListCommand() *cobra.Command {
	var (
		qf         queryFlags
		imageDirs  []string
		sourceDirs []string
		source     bool
	)
	cmd := &cobra.Command{
		Use:   "list [flags] PROCEDURE...",
		Short: "A procedure's instructions with samples per event and source lines, DCPI's dcpilist",
		Long: `Print each named procedure's disassembly annotated with the samples of
every event at each instruction, with the source lines interleaved when the
image has DWARF line information, and the procedure's totals (dcpilist, sec. 3
of the paper). Every image with samples in a procedure of that name is
listed; narrow with --image.

The database keeps each image's record (path, symbols, load base), not its
bytes, so, as DCPI's tools read executables from the file system, dcpi list
finds them by content key (build ID, or SHA-256): first among the binaries
embedded in dcpi (the workloads under /bin/NAME and /vmunix, which the
simulated hosts run), then at the record's path (where dcpi profile or dcpi
node found your simhost.Program), then under each --image-dir (DIR/PATH, DIR/NAME,
then any file of DIR with the image's build ID), then, with --nats, in the
copy the node uploaded to the cluster. It says on standard error which file
it used for each image; a file of another build (rebuilt since it was
profiled) is refused.

Source files are named as the line table names them (the workloads':
src/NAME.c; vmunix's: kernel.c, entry.S) and read from that path or under each
--source-dir; a missing file shows file:line without text.

The shared filters select the samples (default: the whole fleet, every epoch);
--json prints {"events", "procedures": [{"procedure", "image", "image_key",
"file", "start", "end", "counts", "percent", "lines": [...], "has_lines"}]}.`,
		Example: `  dcpi list --db /tmp/prof quick
  dcpi list --db /tmp/prof --source-dir workloads --source-dir hwsim/vmunix/src insertion
  dcpi list --db /tmp/fleet/c1 --host alpha1 --event cycles --event imiss main --image sort
  dcpi list --nats nats://127.0.0.1:4222 --label rack=r1 memcpy --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sel, err := qf.selection()
			if err != nil {
				return err
			}
			o, err := qf.open(cmd, "dcpi-list", &sel)
			if err != nil {
				return err
			}
			defer o.close()
			q := report.ListQuery{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths, Procedures: args,
				Files: newImageFinder(cmd.ErrOrStderr(), o, imageDirs)}
			if source {
				q.Source = imagefind.SourceReader(sourceDirs)
			}
			l, err := report.List(cmd.Context(), o.src, q)
			if err != nil {
				h := o.selectionHint(cmd.Context(), sel)
				if h == "" && errors.Is(err, analysis.ErrQuery) && len(args) > 0 {
					h = profiledb.ProcedureHint(cmd.Context(), o.src, sel)
				}
				if h != "" {
					return fmt.Errorf("%w; %s", err, h)
				}
				return err
			}
			return emit(cmd, qf.json, l)
		},
	}
	f := cmd.Flags()
	qf.register(f, "event column `NAME`, in order (repeatable; default: every event present)")
	f.StringArrayVar(&imageDirs, "image-dir", nil, "look for image files under `DIR` too (repeatable)")
	f.StringArrayVar(&sourceDirs, "source-dir", nil, "look for source files under `DIR` (repeatable)")
	f.BoolVar(&source, "source", true, "show the text of source lines (false: file:line only)")
	return cmd
}
