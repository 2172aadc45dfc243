package localrun

import (
	"bytes"
	"cmp"
	"context"
	"errors"
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
// arrives on sigs, then writes the ground truth, commits the database
// (the one it replaces kept as .old), and only then prints to w the
// profile table, the conservation lines and where the profile went: a
// reader that goes away (SIGPIPE) or an interrupt while it prints loses
// no profile. It returns the exit status the command takes: the
// programs' (ExitCode), 128+N when signal N stopped them, or 141 when w
// is a closed pipe. Nothing is committed when conservation does not
// balance.
//
// The first SIGINT, SIGTERM or SIGPIPE on sigs stops the machines, a
// program waiting for input included, and the run goes on to commit what
// ran; a second SIGINT or SIGTERM ends the process at once with 128+N,
// the uncommitted database removed (Abort). A closed pipe never forces:
// each write to it raises another SIGPIPE.
func Profile(ctx context.Context, w io.Writer, c ProfileConfig, sigs <-chan os.Signal) (int, error) {
	r, err := Start(c.Config)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	done := make(chan struct{})
	defer close(done)
	go r.watch(sigs, done)
	var out bytes.Buffer // printed once the database is committed
	err = r.finish(ctx, &out, c)
	if _, werr := w.Write(out.Bytes()); errors.Is(werr, syscall.EPIPE) && err == nil {
		return 128 + int(syscall.SIGPIPE), nil
	}
	if err != nil {
		return 0, err
	}
	if sig, ok := r.Signal().(syscall.Signal); ok {
		return 128 + int(sig), nil
	}
	return r.ExitCode(), nil
}

// watch stops the run on the first signal of sigs and aborts it, ending
// the process, on a second SIGINT or SIGTERM, until done is closed.
func (r *Run) watch(sigs <-chan os.Signal, done <-chan struct{}) {
	forcing := 0
	for {
		select {
		case <-done:
			return
		case s := <-sigs:
			r.Stop(s)
			if s == syscall.SIGPIPE {
				continue
			}
			if forcing++; forcing >= 2 {
				r.Abort()
				code := 128 + int(syscall.SIGINT)
				if sig, ok := s.(syscall.Signal); ok {
					code = 128 + int(sig)
				}
				os.Exit(code)
			}
		}
	}
}

// stopReasons name a stop's signal in the note on programs still running.
var stopReasons = map[os.Signal]string{
	syscall.SIGINT: "the interrupt", syscall.SIGTERM: "SIGTERM", syscall.SIGPIPE: "a closed output pipe (SIGPIPE)",
}

// finish waits for the run, writes its ground truth, results and the
// notes of the run to w, and commits the database.
func (r *Run) finish(ctx context.Context, w io.Writer, c ProfileConfig) error {
	for _, dir := range r.Removed {
		fmt.Fprintf(w, "note: removed %s, the unfinished database of an earlier run that was killed\n", dir)
	}
	stopped, err := r.Wait(nil)
	if err != nil {
		return err
	}
	for _, u := range r.Unfinished() {
		why := fmt.Sprintf("the --seconds %g limit", c.Seconds)
		if stopped != nil {
			why = cmp.Or(stopReasons[stopped], "signal "+stopped.String())
		}
		on := ""
		if len(r.Hosts()) > 1 {
			on = " on " + u.Host
		}
		fmt.Fprintf(w, "note: %s%s was still running at %s (%.3f simulated s); stopped it there\n", u.Program.Given, on, why, u.SimSeconds)
	}
	if err := r.WriteTruths(c.TruthFile, c.ValuesTruthFile); err != nil {
		return err
	}
	if err := r.writeResults(ctx, w, c); err != nil {
		return err
	}
	kept, err := r.Commit()
	if err != nil {
		return err
	}
	r.writeWhere(w, kept)
	return nil
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
