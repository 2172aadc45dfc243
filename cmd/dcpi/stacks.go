package main

import (
	"dcpi/profiledb"
	"io"

	"github.com/spf13/cobra"
)

func newStacksCommand() *cobra.Command {
	var (
		qf       queryFlags
		bottomUp bool
		topDown  bool
		minPct   float64
		depth    int
	)
	cmd := &cobra.Command{
		Use:   "stacks",
		Short: "Call trees from the sampled call stacks: top-down or bottom-up",
		Long: `Print the call tree of the sampled call stacks (nodes record them with
stacks on) for one event, the first --event (cycles by default):

  --top-down   (default) from the outermost caller (main, or [truncated]
               for a stack the unwinder could not follow to its root) to the
               sampled procedure: each node's total is the samples spent in
               it and what it called on that path, its self those sampled in
               it
  --bottom-up  from the sampled procedure through its callers: the first
               level is the flat profile by procedure, and each node's
               children say who called it

Callers are named at their call sites (the instruction before the return
address). Nodes under --min percent of all the samples, and levels below
--depth, are summed into a "(N more)" line. The filters are dcpi prof's; a
stack is selected by its sampled (leaf) image. --json prints the whole tree:
{"proc": {"procedure", "image"}, "total", "self", "children": [...]}.
For each procedure's callers as a table, see dcpi prof --by-caller; for
flame graphs, dcpi pprof (which exports the stacks) and go tool pprof -http.`,
		Example: `  dcpi stacks --db /tmp/prof
  dcpi stacks --db /tmp/prof --bottom-up --min 2 --depth 4
  dcpi stacks --db /tmp/prof --image hashdb --event imiss --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := profiledb.StacksOptions{TopDown: topDown, BottomUp: bottomUp, MinPercent: minPct, Depth: depth}
			if err := opts.Check(); err != nil {
				return err
			}
			sel, err := qf.selection()
			if err != nil {
				return err
			}
			o, err := qf.open(cmd, "dcpi-stacks", &sel)
			if err != nil {
				return err
			}
			defer o.close()
			r, err := profiledb.Stacks(cmd.Context(), o.src, sel, opts)
			if err != nil {
				return err
			}
			return emit(cmd, qf.json, r)
		},
	}
	f := cmd.Flags()
	qf.register(f, "the `NAME` of the event whose samples are counted (default: cycles; the first given)")
	f.BoolVar(&topDown, "top-down", false, "the tree from the outermost callers down (the default)")
	f.BoolVar(&bottomUp, "bottom-up", false, "the tree from the sampled procedures up through their callers")
	f.Float64Var(&minPct, "min", 1, "leave out nodes under `PCT` percent of the samples")
	f.IntVar(&depth, "depth", 0, "print at most `N` levels (0: all)")
	return cmd
}

// textAndJSON is what a query tool prints: text for people, JSON for
// machines.
type textAndJSON interface {
	WriteText(io.Writer) error
	WriteJSON(io.Writer) error
}

// emit writes r as JSON when asJSON, else as text.
func emit(cmd *cobra.Command, asJSON bool, r textAndJSON) error {
	if asJSON {
		return r.WriteJSON(cmd.OutOrStdout())
	}
	return r.WriteText(cmd.OutOrStdout())
}
