package localrun

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"dcpi/analysis/report"
	"dcpi/analysis/symbolize"
	"dcpi/conservation"
	"dcpi/simhost"
	"dcpi/storage"
)

// ProfileConfig is one run of dcpi profile: the machines and programs of
// Config, and what to write and print once the programs have run.
type ProfileConfig struct {
	Config
	// TruthFile and ValuesTruthFile receive the run's ground truth
	// ("": none); Config.Machine.GroundTruth must be on for either.
	TruthFile, ValuesTruthFile string
	// Limit bounds the procedures in the printed table (0: all).
	Limit int
	// Stats prints the driver's and daemon's figures of every host.
	Stats bool
	// Views are the conservation lines beyond the counters'.
	Views conservation.Views
	// Values prints value sampling's conservation as well.
	Values bool
}

// Profile runs c's programs until they exit, c.Seconds pass or a signal
// arrives on stop, then writes the ground truth, prints to w the profile
// table and the conservation lines, and commits the database (the one
// it replaces kept as .old). It returns the exit status the command
// takes: the programs' (ExitCode), or 128+N when signal N stopped them.
// Nothing is committed when conservation does not balance.
func Profile(ctx context.Context, w io.Writer, c ProfileConfig, stop <-chan os.Signal) (int, error) {
	r, err := Start(c.Config)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	for _, dir := range r.Removed {
		fmt.Fprintf(w, "note: removed %s, the unfinished database of an earlier run that was killed\n", dir)
	}
	interrupted, err := r.Wait(stop)
	if err != nil {
		return 0, err
	}
	for _, u := range r.Unfinished() {
		why := fmt.Sprintf("the --seconds %g limit", c.Seconds)
		if interrupted != nil {
			why = "the interrupt"
		}
		on := ""
		if len(r.Hosts()) > 1 {
			on = " on " + u.Host
		}
		fmt.Fprintf(w, "note: %s%s was still running at %s (%.3f simulated s); stopped it there\n", u.Program.Given, on, why, u.SimSeconds)
	}
	if err := r.WriteTruths(c.TruthFile, c.ValuesTruthFile); err != nil {
		return 0, err
	}
	if err := r.writeResults(ctx, w, c); err != nil {
		return 0, err
	}
	kept, err := r.Commit()
	if err != nil {
		return 0, err
	}
	r.writeWhere(w, kept)
	if sig, ok := interrupted.(syscall.Signal); ok {
		return 128 + int(sig), nil
	}
	return r.ExitCode(), nil
}

// writeResults prints the stats, the profile table and the conservation
// lines, and fails if they do not balance.
func (r *Run) writeResults(ctx context.Context, w io.Writer, c ProfileConfig) error {
	if c.Stats {
		for _, h := range r.hosts {
			if len(r.hosts) > 1 {
				fmt.Fprintf(w, "\n%s:\n", h.Machine.Config().Hostname)
			}
			WriteNodeStats(w, h.Sim, r.Elapsed)
		}
	}
	table, err := report.Prof(ctx, symbolize.New(r.db), report.ProfQuery{Limit: c.Limit})
	if err != nil {
		return err
	}
	cpus := c.Machine.CPUs
	on := fmt.Sprintf("%d CPU%s", cpus, map[bool]string{true: "s"}[cpus != 1])
	if len(r.hosts) > 1 {
		on = fmt.Sprintf("%d hosts (%s to %s) of %s", len(r.hosts), r.names[0], r.names[len(r.names)-1], on)
	}
	fmt.Fprintf(w, "\ndcpi profile: %s on %s, %.3f simulated s\n\n", simhost.ProgramCommands(c.Programs), on, r.SimSeconds())
	if err := table.WriteText(w); err != nil {
		return err
	}
	lines, balanced, err := r.Conservation(c.Views)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s\n", strings.Join(lines, "\n"))
	if !balanced {
		return ErrUnbalanced
	}
	if c.Values {
		mods, s, err := r.db.ValueTotals(ctx, storage.ValueQuery{})
		if err != nil {
			return err
		}
		return simhost.WriteValueConservation(w, mods, s, r.Machines())
	}
	return nil
}

// writeWhere says where the committed profile is and how to look at it.
func (r *Run) writeWhere(w io.Writer, kept bool) {
	fmt.Fprintf(w, "profile written to %s", r.out)
	if kept {
		fmt.Fprintf(w, " (the previous one is now %s.old)", r.out)
	}
	db := ""
	if r.out != "dcpi-db" {
		db = " --db " + ShellQuote(r.out)
	}
	fmt.Fprintf(w, "; see it with dcpi prof%s, dcpi list%s PROCEDURE\n", db, db)
}

// ShellQuote quotes s for a command line shown to the user when it needs
// it.
func ShellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`&|;<>()*?[]#~!{}") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
