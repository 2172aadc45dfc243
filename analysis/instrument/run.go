package instrument

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// FileOptions is one dcpi pp instrument run: the image, the file to
// write and how to rewrite it.
type FileOptions struct {
	// Name is the image's name as given (a path or an embedded
	// workload's name): refusals name it, and Output defaults from it.
	Name string
	// Output is the instrumented file to write (default: Name's base
	// name and "." and the mode); DumpPath in Options defaults from it.
	Output string
	Options
}

// Written is an instrumented image written to its file.
type Written struct {
	Output string
	*Result
}

// InstrumentFile instruments the image data and writes the result,
// executable, to opt.Output.
func InstrumentFile(data []byte, opt FileOptions) (*Written, error) {
	if opt.Output == "" {
		opt.Output = filepath.Base(opt.Name) + "." + opt.Mode
	}
	if opt.DumpPath == "" {
		opt.DumpPath = DefaultDumpPath(opt.Output)
	}
	res, err := Instrument(data, opt.Name, opt.Options)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(opt.Output, res.ELF, 0o755); err != nil {
		return nil, err
	}
	return &Written{Output: opt.Output, Result: res}, nil
}

// WriteSummary prints what was instrumented: one line of totals, then
// the blocks and procedures left uncounted, so that a reader knows what
// the counts will not cover.
func (r *Written) WriteSummary(w io.Writer) error {
	m := r.Manifest
	fmt.Fprintf(w, "%s: %s mode, %d procedures, %d counters, %d trampolines (%d with spilled scratch registers); dumps to %s\n",
		r.Output, m.Mode, len(m.Procs), m.Counters, m.Trampolines, m.Spills, m.DumpPath)
	var uncounted int
	for _, p := range m.Procs {
		for _, b := range p.Blocks {
			if b.Counter < 0 {
				uncounted++
			}
		}
	}
	if uncounted > 0 {
		fmt.Fprintf(w, "  %d blocks not counted (inside an ldx_l/stx_c sequence, or starting with a jump through its own link register)\n", uncounted)
	}
	var err error
	for _, s := range m.Skipped {
		_, err = fmt.Fprintf(w, "  not counted: %s: %s\n", s.Name, s.Reason)
	}
	return err
}

// CountsOptions is one dcpi pp counts report of a dump.
type CountsOptions struct {
	// Instrumented is the instrumented binary's file; Dump the dump it
	// wrote (default: the dump path its manifest names).
	Instrumented, Dump string
	// Top is the blocks, paths or children per record to print (0: all).
	Top int
	// Original reads the uninstrumented image (paths mode, or CCT mode
	// with paths), to show each hot path's blocks; nil when none was
	// given. It is called only once the dump has been read, so that a
	// bad dump is reported before a bad original.
	Original func() ([]byte, error)
	// Save is a file to write the path profile (paths mode) or the tree
	// (CCT mode) to, for comparing and for dcpi pp upload.
	Save string
	// By is the CCT mode's metric that orders each record's children.
	By string
	// JSON prints a paths- or CCT-mode report as JSON.
	JSON bool
}

// WriteCounts reads an instrumented binary's dump and prints its report
// in the shape of the binary's mode: the hot blocks (pixie), the hot
// paths (paths) or the calling context tree (cct).
func WriteCounts(w io.Writer, opt CountsOptions) error {
	bin, err := os.ReadFile(opt.Instrumented)
	if err != nil {
		return err
	}
	m, _, err := ReadManifest(bin)
	if err != nil {
		return err
	}
	dumpPath := m.DumpPath
	if opt.Dump != "" {
		dumpPath = opt.Dump
	}
	dump, err := os.ReadFile(dumpPath)
	if err != nil {
		return err
	}
	switch {
	case m.Mode == ModePaths:
		return writePathCounts(w, bin, dump, opt)
	case m.Mode == ModeCCT:
		if opt.Original != nil && !m.CCTPaths {
			return fmt.Errorf("--original is for a paths-mode dump or a CCT-mode one with --paths; this is %s without paths", m.Mode)
		}
		return writeCCTCounts(w, bin, dump, opt)
	case opt.By != "":
		return fmt.Errorf("--by is for a CCT-mode dump; this is %s", m.Mode)
	case opt.Original != nil || opt.Save != "" || opt.JSON:
		return fmt.Errorf("--original, --save and --json are for a paths- or CCT-mode dump; this is %s", m.Mode)
	}
	c, err := ReadCounts(bin, dump)
	if err != nil {
		return err
	}
	return c.Write(w, opt.Top)
}

// original is the uninstrumented image opt names, or nil.
func (opt CountsOptions) original() ([]byte, error) {
	if opt.Original == nil {
		return nil, nil
	}
	return opt.Original()
}

func writePathCounts(w io.Writer, bin, dump []byte, opt CountsOptions) error {
	pc, err := ReadPaths(bin, dump)
	if err != nil {
		return err
	}
	orig, err := opt.original()
	if err != nil {
		return err
	}
	rep, err := NewPathsReport(pc, orig, opt.Top)
	if err != nil {
		return err
	}
	if err := saveTo(opt.Save, pc.Profile.Encode); err != nil {
		return err
	}
	if opt.JSON {
		return writeJSON(w, rep)
	}
	return rep.Write(w)
}

func writeCCTCounts(w io.Writer, bin, dump []byte, opt CountsOptions) error {
	p, err := ReadCCT(bin, dump)
	if err != nil {
		return err
	}
	orig, err := opt.original()
	if err != nil {
		return err
	}
	rep, err := NewCCTReport(p, orig, opt.Top)
	if err != nil {
		return err
	}
	if opt.By != "" && p.Tree.Metric(opt.By) < 0 {
		return fmt.Errorf("--by %s: the tree's metrics are %s", opt.By, strings.Join(p.Tree.Metrics, ", "))
	}
	if err := saveTo(opt.Save, p.WriteSaved); err != nil {
		return err
	}
	if opt.JSON {
		return writeJSON(w, rep)
	}
	return rep.Write(w, opt.By, opt.Top)
}

// saveTo writes a file with write, when name is given.
func saveTo(name string, write func(io.Writer) error) error {
	if name == "" {
		return nil
	}
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("save: %w", err)
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("save: %w", err)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
