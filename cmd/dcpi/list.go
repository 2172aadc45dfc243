package main

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"dcpi/analysis"
	"dcpi/hwsim/vmunix"
	"dcpi/wire"
	"dcpi/workloads"
)

func init() { subcommands = append(subcommands, newListCommand) }

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
finds them: first among the binaries embedded in dcpi (the workloads under
/bin/NAME and /vmunix, which the simulated hosts run), then at the record's
path, then under each --image-dir (DIR/PATH, then DIR/NAME). Bytes whose
content key (build ID, or SHA-256) is not the profiled image's are refused.

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
			q := analysis.ListQuery{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths, Procedures: args,
				Files: imageFinder{dirs: imageDirs}}
			if source {
				q.Source = sourceReader(sourceDirs)
			}
			l, err := analysis.List(o.src, q)
			if err != nil {
				if h := o.emptyHint(sel.Filter); h != "" {
					return fmt.Errorf("%w; %s", err, h)
				}
				return err
			}
			if qf.json {
				return analysis.WriteListJSON(cmd.OutOrStdout(), l)
			}
			return analysis.WriteListText(cmd.OutOrStdout(), l)
		},
	}
	f := cmd.Flags()
	qf.register(f, "event column `NAME`, in order (repeatable; default: every event present)")
	f.StringArrayVar(&imageDirs, "image-dir", nil, "look for image files under `DIR` too (repeatable)")
	f.StringArrayVar(&sourceDirs, "source-dir", nil, "look for source files under `DIR` (repeatable)")
	f.BoolVar(&source, "source", true, "show the text of source lines (false: file:line only)")
	return cmd
}

// imageFinder finds an image's bytes as dcpi list's help says: embedded,
// at the record's path, under each directory; the first whose content key
// is the record's wins.
type imageFinder struct{ dirs []string }

func (f imageFinder) FindImage(rec *wire.ImageRecord) ([]byte, string, error) {
	var tried []string
	mismatch := false
	try := func(data []byte, where string) bool {
		k, _, err := analysis.ImageKeyOf(data, where)
		switch {
		case err != nil:
			tried = append(tried, fmt.Sprintf("%s: %v", where, err))
		case k != rec.Key:
			mismatch = true
			tried = append(tried, fmt.Sprintf("%s is %v", where, k))
		default:
			return true
		}
		return false
	}
	if rec.Path == vmunix.Path {
		if try(vmunix.Image(), "embedded "+vmunix.Path) {
			return vmunix.Image(), "embedded " + vmunix.Path, nil
		}
	} else if path.Dir(rec.Path) == workloads.BinDir {
		if b, err := workloads.Binary(path.Base(rec.Path)); err == nil && try(b, "embedded "+rec.Path) {
			return b, "embedded " + rec.Path, nil
		}
	}
	paths := []string{rec.Path}
	for _, d := range f.dirs {
		paths = append(paths, filepath.Join(d, filepath.FromSlash(rec.Path)), filepath.Join(d, path.Base(rec.Path)))
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				tried = append(tried, err.Error())
			}
			continue
		}
		if try(b, p) {
			return b, p, nil
		}
	}
	why := analysis.ErrNoImageFile
	if mismatch {
		why = analysis.ErrImageMismatch
	}
	msg := fmt.Sprintf("no file with content key %v (looked embedded, at %s", rec.Key, rec.Path)
	if len(f.dirs) > 0 {
		msg += " and under " + strings.Join(f.dirs, ", ")
	} else {
		msg += "; add --image-dir DIR"
	}
	msg += ")"
	if len(tried) > 0 {
		msg += ": " + strings.Join(tried, "; ")
	}
	return nil, "", fmt.Errorf("%s: %w", msg, why)
}

// sourceReader reads a source file named by a line table: at its path,
// then under each directory (DIR/FILE, then DIR/BASENAME).
func sourceReader(dirs []string) func(string) ([]byte, error) {
	return func(file string) ([]byte, error) {
		cands := []string{file}
		for _, d := range dirs {
			cands = append(cands, filepath.Join(d, file), filepath.Join(d, filepath.Base(file)))
		}
		for _, c := range cands {
			if b, err := os.ReadFile(c); err == nil {
				return b, nil
			}
		}
		return nil, fmt.Errorf("source %s: %w", file, os.ErrNotExist)
	}
}
