package profiledb

import (
	"context"
	"errors"
	"fmt"
	"io"

	"dcpi/analysis"
	"dcpi/analysis/report"
)

// StacksOptions are dcpi stacks' view of the call tree as given (the
// flags --top-down, --bottom-up, --min and --depth).
type StacksOptions struct {
	// TopDown and BottomUp choose the paths' direction; neither is
	// top-down, both are refused.
	TopDown, BottomUp bool
	// MinPercent leaves out nodes under this share of the samples (0 to
	// 100).
	MinPercent float64
	// Depth prints at most this many levels; 0: all.
	Depth int
}

// Check refuses contradictory or out-of-range options, naming the flag.
func (o StacksOptions) Check() error {
	if o.TopDown && o.BottomUp {
		return fmt.Errorf("--top-down and --bottom-up: choose one")
	}
	if o.MinPercent < 0 || o.MinPercent > 100 {
		return fmt.Errorf("--min %g: want a percentage from 0 to 100", o.MinPercent)
	}
	if o.Depth < 0 {
		return fmt.Errorf("--depth %d: want 0 (all) or more", o.Depth)
	}
	return nil
}

// StacksReport is what dcpi stacks prints: the call tree and the view it
// is printed with.
type StacksReport struct {
	Tree    *report.CallTree
	Options StacksOptions
}

// Stacks builds dcpi stacks' call tree of sel's stacks (sel.StackQuery)
// from src, after checking o.
func Stacks(ctx context.Context, src analysis.Source, sel Selection, o StacksOptions) (*StacksReport, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	t, err := report.Tree(ctx, src, report.TreeQuery{StackQuery: sel.StackQuery(), TopDown: !o.BottomUp})
	if err != nil {
		return nil, err
	}
	if t.Root.Total == 0 {
		// None selected: none at all, or the filters' doing (NoStacksNote).
		all, err := report.Tree(ctx, src, report.TreeQuery{TopDown: true})
		if err == nil && all.Root.Total == 0 {
			return nil, ErrNoStacks
		}
	}
	return &StacksReport{Tree: t, Options: o}, nil
}

// ErrNoStacks is Stacks' refusal of a profile that holds no call stacks,
// naming the commands that record them.
var ErrNoStacks = errors.New("this profile holds no call stacks: dcpi profile records them (unless --no-stacks), dcpi node with --stacks")

// WriteText prints the tree pruned by the options (CallTree.WriteText),
// and NoStacksNote when no stack was selected.
func (r *StacksReport) WriteText(w io.Writer) error {
	if err := r.Tree.WriteText(w, r.Options.MinPercent, r.Options.Depth); err != nil {
		return err
	}
	if r.Tree.Root.Total == 0 {
		_, err := fmt.Fprintln(w, NoStacksNote)
		return err
	}
	return nil
}

// WriteJSON writes the whole tree, unpruned (CallTree.WriteJSON).
func (r *StacksReport) WriteJSON(w io.Writer) error { return r.Tree.WriteJSON(w) }
