package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"dcpi/analysis"
)

func init() { subcommands = append(subcommands, newPprofCommand) }

func newPprofCommand() *cobra.Command {
	var (
		qf      queryFlags
		output  string
		byHost  bool
		byEpoch bool
	)
	cmd := &cobra.Command{
		Use:   "pprof",
		Short: "Export a profile as a gzip'd profile.proto for go tool pprof",
		Long: `Write the selected samples as a pprof profile (gzip'd profile.proto,
github.com/google/pprof), so that go tool pprof (top, peek, tags, web, flame
graphs) reads fleet profiles:

  sample types  one per event: type the event's name, unit "samples"
  mappings      one per image: start its load base, file its path, build ID
  locations     one per instruction with samples: load base + offset
  functions     the procedures of the images' uploaded symbol tables
                (unknown_rtn where none covers)
  labels        host (string) with --by-host, epoch (number) with --by-epoch,
                or when the filters select exactly one

Without --by-host the samples are summed over hosts (the fleet roll-up when
no --host is given). pprof names functions by name alone, so same-named
procedures of different images (say memcpy of two static binaries) share a
row in go tool pprof -top; dcpi prof keeps them apart.

Prints a summary line (or, with --json, {"output", "sample_types": [{"type",
"unit", "total"}], "samples", "locations", "functions", "mappings"}).`,
		Example: `  dcpi pprof --db /tmp/fleet/c1 -o fleet.pb.gz && go tool pprof -top fleet.pb.gz
  dcpi pprof --db /tmp/fleet/c1 --by-host --by-epoch -o tagged.pb.gz && go tool pprof -tags tagged.pb.gz
  dcpi pprof --db /tmp/fleet/c1 --event imiss --image sort -o imiss.pb.gz
  dcpi pprof --nats nats://127.0.0.1:4222 --label rack=r1 -o - > r1.pb.gz`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			sel, err := qf.selection()
			if err != nil {
				return err
			}
			o, err := qf.open(cmd, "dcpi-pprof", &sel)
			if err != nil {
				return err
			}
			defer o.close()
			q := analysis.PprofQuery{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths, ByHost: byHost, ByEpoch: byEpoch}
			if byHost && q.Filter.Hosts == nil {
				if q.Filter.Hosts, err = o.hosts(); err != nil {
					return fmt.Errorf("--by-host: %w", err)
				}
			}
			if byEpoch && q.Filter.Epochs == nil {
				if q.Filter.Epochs, err = o.epochs(); err != nil {
					return fmt.Errorf("--by-epoch: %w", err)
				}
				if len(q.Filter.Epochs) == 0 {
					return fmt.Errorf("--by-epoch: the database lists no epochs (a dcpi node database has no epoch records); give them with --epochs A-B")
				}
			}
			p, err := analysis.Pprof(o.src, q)
			if err != nil {
				return err
			}
			if output == "" {
				return fmt.Errorf("--output: give a file name, or - for standard output")
			}
			var w io.Writer = cmd.OutOrStdout()
			summary := cmd.OutOrStdout()
			if output != "-" {
				fh, err := os.Create(output)
				if err != nil {
					return fmt.Errorf("--output: %w", err)
				}
				defer fh.Close()
				w = fh
			} else {
				summary = cmd.ErrOrStderr()
			}
			if err := p.Write(w); err != nil {
				return fmt.Errorf("write %s: %w", output, err)
			}
			if fh, ok := w.(*os.File); ok {
				if err := fh.Close(); err != nil {
					return fmt.Errorf("write %s: %w", output, err)
				}
			}
			return pprofSummary(summary, output, p, qf.json)
		},
	}
	f := cmd.Flags()
	qf.register(f, "sample type `NAME`, in order; the first is the default (repeatable; default: every event present)")
	f.StringVarP(&output, "output", "o", "dcpi.pb.gz", "write the profile to `FILE` (- for standard output)")
	f.BoolVar(&byHost, "by-host", false, "keep hosts apart, labelled host=H")
	f.BoolVar(&byEpoch, "by-epoch", false, "keep epochs apart, labelled epoch=N")
	return cmd
}

// pprofSummary says what was written.
func pprofSummary(w io.Writer, output string, p *profile.Profile, asJSON bool) error {
	type st struct {
		Type  string `json:"type"`
		Unit  string `json:"unit"`
		Total int64  `json:"total"`
	}
	types := make([]st, len(p.SampleType))
	for i, t := range p.SampleType {
		types[i] = st{Type: t.Type, Unit: t.Unit}
	}
	for _, s := range p.Sample {
		for i, v := range s.Value {
			types[i].Total += v
		}
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"output": output, "sample_types": types, "samples": len(p.Sample),
			"locations": len(p.Location), "functions": len(p.Function), "mappings": len(p.Mapping)})
	}
	fmt.Fprintf(w, "wrote %s:", output)
	for _, t := range types {
		fmt.Fprintf(w, " %s = %d,", t.Type, t.Total)
	}
	_, err := fmt.Fprintf(w, " %d samples at %d locations in %d functions of %d images\n", len(p.Sample), len(p.Location), len(p.Function), len(p.Mapping))
	return err
}
