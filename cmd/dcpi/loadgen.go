package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"dcpi/config"
	"dcpi/loadgen/hostrec"
)

func newLoadgenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "loadgen",
		Short: "Record a simulated host's agent output, replay it as many hosts against a cluster, and measure",
		Long: `dcpi loadgen measures how many hosts a cluster sustains (docs/loadgen.md).

"record" runs one simulated host with DCPI's driver and daemon, as dcpi
node does, and saves every sample batch and image record its agent
publishes, with the simulated time of each, in a versioned recording
file. "run" replays the recording as N agents at the recorded (real)
rate, each with its own host name and sequence numbers, against a real
cluster, and reports the generated and stored rates, exact conservation
after the drain, the delay from publish to queryable, and CPU and memory
per role.`,
		Example: `  dcpi loadgen record --out /tmp/host.dcpiload --seconds 4
  dcpi loadgen run --recording /tmp/host.dcpiload --hosts 16 --seconds 20
  dcpi loadgen run --recording /tmp/host.dcpiload --find-knee --hosts 8 --seconds 30`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newLoadgenRecordCommand(), newLoadgenRunCommand())
	return cmd
}

func newLoadgenRecordCommand() *cobra.Command {
	var (
		o   hostrec.Options
		out string
	)
	cmd := &cobra.Command{
		Use:   "record",
		Short: "Run a simulated host and save what its agent publishes",
		Long: `Run one simulated host — the workload mix on the 21164 model with DCPI's
driver and daemon, as dcpi node runs it, programs started again as they
exit — for --seconds of simulated time, and save every batch and image
record its agent would publish, in order, each with the simulated cycle
its batch was cut, to --out (a versioned file with a header and a
checksum; dcpi loadgen run refuses any other version or a damaged file).`,
		Example: `  dcpi loadgen record --out /tmp/host.dcpiload --seconds 4`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("--out: name the recording file to write")
			}
			rec, err := hostrec.Record(cmd.Context(), o, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if err := rec.Encode(&buf); err != nil {
				return err
			}
			if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
				return err
			}
			hostrec.WriteSummary(cmd.OutOrStdout(), rec, o, out, buf.Len())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "recording file to write (required)")
	f.Float64Var(&o.Seconds, "seconds", 4, "simulated seconds to record")
	f.IntVar(&o.CPUs, "cpus", 4, "simulated CPUs (DCPI's hosts had 4)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed for everything random on the machine")
	f.StringVar(&o.Mix, "mix", "default", "embedded workload mix to run")
	f.StringVar(&o.Host, "host", "alpha0", "the recorded host's name (replay renames it)")
	f.Float64Var(&o.FlushEvery, "flush-every", config.Defaults().Node.FlushEvery, "simulated seconds between full drains of the driver tables (dcpi node's default)")
	f.Float64Var(&o.PublishEvery, "publish-every", config.Defaults().Node.PublishEvery, "the daemon's publish window in simulated seconds (dcpi node's default; 0: a batch per drain)")
	f.BoolVar(&o.Timing, "timing", false, "run the 21164 timing model (slower to record; the sample mix barely changes)")
	f.StringSliceVar(&o.Events, "events", []string{"cycles", "imiss"}, "events to count, as dcpi node --events")
	return cmd
}
