// Command weekrun operates a fleet for a simulated week (package
// loadgen/week): hourly epochs, a retention policy, the database's size
// and the "last hour" and "last week" queries measured after every
// simulated hour. It writes the series as JSON and two SVG plots into
// docs/ and exits non-zero when a check fails (docs/week.md):
//
//	make week
//	go run ./internal/tools/weekrun [-hours 168] [-hosts 16] [-replicas 3] [-keep 96h]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"dcpi/coordinator"
	"dcpi/loadgen"
	"dcpi/loadgen/week"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "weekrun:", err)
		os.Exit(1)
	}
}

func run() error {
	rec := flag.String("recording", "loadgen/week/testdata/host.dcpiload", "the recording the hosts replay (dcpi loadgen record)")
	hours := flag.Int("hours", 168, "simulated hours")
	hosts := flag.Int("hosts", 16, "hosts replaying the recording")
	windows := flag.Int("windows", 2, "recorded publish windows each host publishes per simulated hour")
	replicas := flag.Int("replicas", 3, "coordinator replicas")
	full := flag.Duration("full", 48*time.Hour, "retention: keep epochs at full resolution this long")
	mergeTo := flag.Duration("merge-to", 24*time.Hour, "retention: merge older epochs into windows this long")
	keep := flag.Duration("keep", 96*time.Hour, "retention: delete epochs older than this (the examples' 720h expires nothing in a week)")
	out := flag.String("out", "docs", "directory for week.json, week-size.svg and week-queries.svg")
	flag.Parse()

	b, err := os.ReadFile(*rec)
	if err != nil {
		return err
	}
	r, err := loadgen.Decode(b)
	if err != nil {
		return fmt.Errorf("%s: %w", *rec, err)
	}
	pol := coordinator.Retention{Full: *full, MergeTo: *mergeTo, Keep: *keep}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	res, err := week.Run(ctx, week.Config{Recording: r, Hosts: *hosts, WindowsPerHour: *windows, Hours: *hours, Replicas: *replicas,
		Retention: pol, Hour: func(h week.Hour) {
			fmt.Printf("hour %3d: %2d epochs (%d merged), %6.1f MB (settled %5.1f), last hour %6.1f ms, last week %7.1f ms (%3d epochs), expired %d, %d ms\n",
				h.Hour, h.Epochs, h.Merged, float64(h.DiskBytes)/1e6, float64(h.Settled)/1e6, h.LastHour.Millis, h.LastWeek.Millis,
				h.LastWeek.Epochs, h.Expired, h.WallMillis)
		}})
	if err != nil {
		return err
	}
	fmt.Printf("%s\n%v scheduled cuts (%v superseded) in %d hours; %v epochs merged away, %v expired; %v wall\n",
		res.Conservation, res.Cuts, res.Superseded, res.Hours, res.MergedAway, res.ExpiredEpochs, res.Wall.Round(time.Second))
	for name, write := range map[string]func(*bytes.Buffer) error{
		"week.json":        func(w *bytes.Buffer) error { return res.WriteJSON(w) },
		"week-size.svg":    func(w *bytes.Buffer) error { return res.WriteSizeSVG(w) },
		"week-queries.svg": func(w *bytes.Buffer) error { return res.WriteQuerySVG(w) },
	} {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*out, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	// Level from the policy's horizon plus a merge window on.
	lim := week.Limits{LevelFrom: int((pol.Keep + pol.MergeTo) / time.Hour), SizeFactor: 1.25, Window: 24, QueryFactor: 2, QuerySlackMillis: 20}
	if err := res.Check(lim); err != nil {
		return err
	}
	fmt.Println("checks passed: conservation exact, one cut per hour, size level, last-hour query flat")
	return nil
}
