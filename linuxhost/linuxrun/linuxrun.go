// Package linuxrun is dcpi profile --linux: a real command and its
// children profiled on this Linux machine by DCPI's driver and daemon
// over perf_event_open (package linuxhost), into a new local profile
// database of the simulated runs' format, written aside and renamed into
// place (localrun.Aside), with the run's conservation line. The host's
// registry entry records the machine kind (profiledb.MachineLabel), which
// the tools that need a simulated Alpha refuse.
package linuxrun

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"dcpi/analysis/report"
	"dcpi/analysis/symbolize"
	"dcpi/conservation"
	"dcpi/linuxhost"
	"dcpi/node"
	"dcpi/profiledb"
	"dcpi/simhost"
	"dcpi/simhost/localrun"
	"dcpi/storage"
)

// Config is one dcpi profile --linux run.
type Config struct {
	Argv   []string
	Output string
	Host   string
	Labels map[string]string
	Event  string
	Freq   uint64 // samples per second per CPU
	Stacks bool
	Limit  int // procedures in the printed table (0: all)
	// FlushEvery is the wall time between full drains (0: 1 s).
	FlushEvery time.Duration
	Stdin      io.Reader
	Stdout     io.Writer
	Stderr     io.Writer
}

// Profile runs c.Argv held before exec, opens the events on it, lets it
// run with its children until it exits (an interrupt or SIGTERM to dcpi
// is passed on to it), then prints to w the profile table and the conservation line
// and commits the database. It returns the command's exit status.
func Profile(ctx context.Context, w io.Writer, c Config) (int, error) {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(stop)
	if c.Host == "" {
		c.Host, _ = os.Hostname()
		c.Host = strings.ReplaceAll(c.Host, ".", "-")
	}
	if c.FlushEvery == 0 {
		c.FlushEvery = time.Second
	}
	held, err := linuxhost.StartHeld(c.Argv, c.Stdin, c.Stdout, c.Stderr)
	if err != nil {
		return 0, err
	}
	released := false
	defer func() {
		if !released {
			held.Kill()
		}
	}()
	hcfg := linuxhost.Config{Event: c.Event, Freq: c.Freq, PID: held.PID(), EnableOnExec: true}
	if c.Stacks {
		// Stacks walked with .eh_frame from copies of the user stack:
		// right for code without frame pointers.
		hcfg.UserStack = linuxhost.DefaultUserStack
	}
	h, err := linuxhost.New(hcfg)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	a, err := localrun.OpenAside(c.Output)
	if err != nil {
		return 0, err
	}
	defer a.Close()
	for _, dir := range a.Removed {
		fmt.Fprintf(w, "note: removed %s, the unfinished database of an earlier run that was killed\n", dir)
	}
	labels := maps.Clone(c.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[profiledb.MachineLabel] = linuxhost.Machine()
	ev, _ := linuxhost.LookupEvent(c.Event)
	if c.Freq == 0 {
		c.Freq = 999
	}
	now := time.Now()
	// A sample stands for 1/Freq s of a CPU: in ns, the clock events' unit.
	reg := storage.Node{Host: c.Host, CPUs: h.CPUs(), Labels: labels, Registered: now, Updated: now,
		Periods: map[uint8]uint64{ev.Alpha: uint64(time.Second) / c.Freq}}
	if err := a.DB().PutNode(reg); err != nil {
		return 0, err
	}
	ncfg := node.DefaultConfig()
	ncfg.Host, ncfg.KernelBase = c.Host, linuxhost.KernelBase
	if c.Stacks {
		ncfg.Driver.Stacks = node.DefaultStackConfig()
	}
	n, err := node.New(h, ncfg, simhost.LocalSink{DB: a.DB()}, h.Images())
	if err != nil {
		return 0, err
	}
	done := make(chan struct{})
	var status int
	var sig os.Signal
	if err := held.Release(); err != nil {
		return 0, err
	}
	released = true
	go func() {
		held.Cmd.Wait()
		if ws, ok := held.Cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status = 128 + int(ws.Signal())
		} else {
			status = held.Cmd.ProcessState.ExitCode()
		}
		close(done)
	}()
	go func() {
		for {
			select {
			case s := <-stop:
				sig = s
				held.Cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	start, before := time.Now(), agentCPU()
	if err := h.Run(n, done, c.FlushEvery); err != nil {
		return 0, err
	}
	elapsed, cpu := time.Since(start), agentCPU()-before
	table, err := report.Prof(ctx, symbolize.New(a.DB()), report.ProfQuery{Limit: c.Limit})
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(w, "\ndcpi profile --linux: %s on %d CPUs (%s, %d/s per CPU), %.3f s\n\n", strings.Join(c.Argv, " "), h.CPUs(), ev.Name, c.Freq, elapsed.Seconds())
	if err := table.WriteText(w); err != nil {
		return 0, err
	}
	lines, balanced, err := Conservation(a.DB(), h.Counts(), c.Stacks)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(w, "\n%s\n", strings.Join(lines, "\n"))
	if !balanced {
		return 0, localrun.ErrUnbalanced
	}
	if k := h.Counts(); k.Generated > 0 {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		fmt.Fprintf(w, "agent: %.1f ms of CPU for %d samples (%.1f µs a sample, reading, aggregating and storing), %d MiB resident at most\n",
			cpu.Seconds()*1e3, k.Generated, cpu.Seconds()*1e6/float64(k.Generated), ru.Maxrss>>10)
	}
	if k := h.Counts(); k.Walks.Walked > 0 {
		fmt.Fprintln(w, StacksLine(k))
	}
	kept, err := a.Commit()
	if err != nil {
		return 0, err
	}
	localrun.WriteWhere(w, a.Output(), kept)
	if s, ok := sig.(syscall.Signal); ok && status == 0 {
		return 128 + int(s), nil
	}
	return status, nil
}

// StacksLine says what the walks of the copied user stacks did: how
// many stopped before the outermost frame (their stacks are stored
// marked truncated), frames by frame pointer, their cost.
func StacksLine(c linuxhost.Counts) string {
	w := c.Walks
	n := float64(max(w.Walked, 1))
	line := fmt.Sprintf("stacks: %d walked from %d-byte copies (%.0f ring bytes a sample), %.1f frames each, %d truncated (%.1f%%), %d frames by frame pointer, %.1f µs a walk",
		w.Walked, linuxhost.DefaultUserStack, float64(c.SampleBytes)/float64(max(c.Delivered, 1)), float64(w.Frames)/n,
		w.Truncated, 100*float64(w.Truncated)/n, w.FramePointer, float64(w.Nanos-w.TableNanos)/1e3/n)
	if w.TableErrors > 0 {
		line += fmt.Sprintf("; %d images' .eh_frame unreadable", w.TableErrors)
	}
	return line
}

// Conservation is the run's conservation lines: every sample the kernel
// took (delivered to the driver or lost in a ring) stored or counted
// under a named drop.
func Conservation(db *storage.DB, c linuxhost.Counts, stacks bool) ([]string, bool, error) {
	t, err := localrun.Totals(db, storage.Query{})
	if err != nil {
		return nil, false, err
	}
	// A lost sample has no stack either: the stack view's generated is
	// what reached the driver, and its drops are its own.
	lines, ok := conservation.Lines(c.Generated, c.Delivered, t, conservation.Views{Source: conservation.LinuxKernel, Stacks: stacks})
	return lines, ok, nil
}

// agentCPU is this process's CPU time so far (user and system): the
// agent's, the profiled command being a child.
func agentCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
