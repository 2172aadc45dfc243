package profileme

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"dcpi/analysis/symbolize"
	"dcpi/hwsim/alpha/disasm"
	"dcpi/storage"
	"dcpi/wire"
)

// Options are dcpi me's request: which view of the selection's ProfileMe
// samples (a summary of procedures or one procedure's listing, the hot
// paths, or the hot addresses) and the constants its estimates need. Run
// turns them into a Query, a PathQuery or an AddrQuery, so that the
// command only fills them from its flags.
type Options struct {
	// Filter and ImagePaths select as in Query.
	Filter     storage.Query
	ImagePaths []string
	// Procedure lists one procedure instruction by instruction (with
	// Paths: keeps that procedure's paths only).
	Procedure string
	// Interval is S; Limit caps the procedures of a summary, the paths,
	// or the addresses per instruction (0: all; negative is refused).
	Interval float64
	Limit    int
	// PairWindow and IssueWidth are Query's wasted-slot constants.
	PairWindow, IssueWidth float64
	// Paths asks for the hot paths from Bits history bits instead
	// (Paths); Files finds the images' code for them.
	Paths bool
	Bits  int
	Files symbolize.ImageFinder
	// Addrs, a procedure's name or an address (0x...), asks for the hot
	// effective addresses of its instructions instead (Addresses).
	Addrs string
	// Where names the source in a refusal ("the cluster", a database).
	Where string
	// Hint says why the selection matched nothing, when it did: the
	// caller knows the database's hosts and epochs, this package does
	// not. Nil or "": the refusal asks whether the nodes sampled at all.
	Hint func() string
}

// Check refuses Options that are wrong whatever the data: a negative
// Limit. Run checks too; a command checks first to refuse before it opens
// a database.
func (o Options) Check() error {
	if o.Limit < 0 {
		return fmt.Errorf("--limit %d: want 0 (all) or more", o.Limit)
	}
	return nil
}

// Output is what Run returns, whichever view: it prints itself for people
// or for machines.
type Output interface {
	WriteText(w io.Writer) error
	WriteJSON(w io.Writer) error
}

// Run reads the view o asks for from src (which must also be an
// AddrSource for Addrs, a HistorySource for Paths), naming code with
// syms. An empty result is an error that says what was missing: the
// command prints what Run returns and nothing else.
func Run(ctx context.Context, syms *symbolize.Symbolizer, src Source, o Options) (Output, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	switch {
	case o.Addrs != "":
		return runAddrs(ctx, syms, src, o)
	case o.Paths:
		return runPaths(ctx, syms, src, o)
	}
	q := Query{Filter: o.Filter, ImagePaths: o.ImagePaths, Procedure: o.Procedure, Interval: o.Interval, Limit: o.Limit,
		PairWindow: o.PairWindow, IssueWidth: o.IssueWidth}
	q.Filter.Events = nil
	rep, err := Profile(ctx, syms, src, q)
	if err != nil {
		return nil, err
	}
	if len(rep.Procs) == 0 {
		what := "no ProfileMe samples selected"
		if q.Procedure != "" {
			what = fmt.Sprintf("no ProfileMe samples in procedure %s", q.Procedure)
		}
		if o.Hint != nil {
			if h := o.Hint(); h != "" {
				return nil, fmt.Errorf("%s: %s", what, h)
			}
		}
		return nil, fmt.Errorf("%s (were the nodes run with --profileme?)", what)
	}
	if rep.Listing && o.Files != nil {
		Annotate(ctx, syms, o.Files, rep)
	}
	return rep, nil
}

// Annotate gives a listing's instructions their disassembly and source
// lines from the image files files finds, as dcpi list shows them; an
// image not found leaves its instructions bare (the listing still
// prints, "?" for the instruction).
func Annotate(ctx context.Context, syms *symbolize.Symbolizer, files symbolize.ImageFinder, rep *Report) {
	for pi := range rep.Procs {
		p := &rep.Procs[pi]
		key, err := wire.ParseImageKey(p.Key)
		if err != nil {
			continue
		}
		rec, err := syms.Image(ctx, key)
		if err != nil {
			continue
		}
		data, where, err := files.FindImage(ctx, rec)
		if err != nil {
			continue
		}
		f, err := symbolize.OpenImageFile(rec, data, where)
		if err != nil {
			continue
		}
		for ii := range p.Instrs {
			in := &p.Instrs[ii]
			if w, ok := f.Word(in.Addr); ok {
				in.Insn = disasm.Insn(w, in.Addr, f.ELF)
			}
			if file, line, ok := f.Line(in.Addr); ok {
				in.File, in.Line = file, line
			}
		}
	}
}

// runAddrs is Run's Addrs view.
func runAddrs(ctx context.Context, syms *symbolize.Symbolizer, src Source, o Options) (Output, error) {
	as, ok := src.(AddrSource)
	if !ok {
		return nil, fmt.Errorf("--addrs: %s does not serve ProfileMe address lists", o.Where)
	}
	ins, err := Addresses(ctx, syms, as, AddrQuery{Filter: o.Filter, ImagePaths: o.ImagePaths, Target: o.Addrs, Interval: o.Interval, Limit: o.Limit})
	if err != nil {
		return nil, err
	}
	if len(ins) == 0 {
		return nil, fmt.Errorf("--addrs %s: no ProfileMe address lists selected", o.Addrs)
	}
	return &AddrReport{Interval: o.Interval, Instrs: ins}, nil
}

// runPaths is Run's Paths view.
func runPaths(ctx context.Context, syms *symbolize.Symbolizer, src Source, o Options) (Output, error) {
	hs, ok := src.(HistorySource)
	if !ok {
		return nil, fmt.Errorf("--paths: %s keeps no ProfileMe path history", o.Where)
	}
	rep, err := Paths(ctx, syms, hs, PathQuery{Filter: o.Filter, ImagePaths: o.ImagePaths, Procedure: o.Procedure, Bits: o.Bits,
		Interval: o.Interval, Limit: o.Limit, Files: o.Files})
	if err != nil {
		return nil, err
	}
	if rep.Samples == 0 {
		return nil, fmt.Errorf("no ProfileMe path history selected (were the nodes run with --profileme, by a build that keeps it?)")
	}
	return rep, nil
}

// AddrReport is Addresses' answer with the S its estimates were made
// with, so that it prints itself as Run's other views do.
type AddrReport struct {
	Interval float64
	Instrs   []AddrInstr
}

// WriteText prints the hot addresses (WriteAddresses).
func (r *AddrReport) WriteText(w io.Writer) error { return WriteAddresses(w, r.Instrs, r.Interval) }

// WriteJSON writes the instructions' hot lists as one indented JSON
// array: [{"procedure", "image", "pc", "samples", "tau", "addresses":
// [{"address", "count", "estimate", "share"}]}].
func (r *AddrReport) WriteJSON(w io.Writer) error { return writeJSON(w, r.Instrs) }

// WriteText prints the report (Write).
func (r *Report) WriteText(w io.Writer) error { return Write(w, r) }

// WriteJSON writes the report as one indented JSON object.
func (r *Report) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteText prints the hot paths (WritePaths).
func (r *PathsReport) WriteText(w io.Writer) error { return WritePaths(w, r) }

// WriteJSON writes the paths report as one indented JSON object.
func (r *PathsReport) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// writeJSON writes v indented, as every dcpi tool's --json does.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
