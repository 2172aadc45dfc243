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
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
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
	from := flag.String("from-json", "", "run nothing: redraw the plots and the summary from this week.json")
	logFile := flag.String("log", "", "write the cluster's log lines (cuts, merges, expiries) to this file")
	flag.Parse()

	if *from != "" {
		b, err := os.ReadFile(*from)
		if err != nil {
			return err
		}
		var res week.Result
		if err := json.Unmarshal(b, &res); err != nil {
			return fmt.Errorf("%s: %w", *from, err)
		}
		return report(&res, *out)
	}

	b, err := os.ReadFile(*rec)
	if err != nil {
		return err
	}
	r, err := loadgen.Decode(b)
	if err != nil {
		return fmt.Errorf("%s: %w", *rec, err)
	}
	pol := coordinator.Retention{Full: *full, MergeTo: *mergeTo, Keep: *keep}
	var logger *slog.Logger
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			return err
		}
		defer f.Close()
		logger = slog.New(slog.NewTextHandler(f, nil))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	res, err := week.Run(ctx, week.Config{Recording: r, Hosts: *hosts, WindowsPerHour: *windows, Hours: *hours, Replicas: *replicas,
		Retention: pol, Logger: logger, Hour: func(h week.Hour) {
			fmt.Printf("hour %3d: %2d epochs (%d merged), %6.1f MB (sstables %5.1f, WAL %5.1f, stale %5.1f; settled %5.1f), last hour %6.1f ms, last week %7.1f ms (%3d epochs), expired %d, %d ms\n",
				h.Hour, h.Epochs, h.Merged, float64(h.DiskBytes)/1e6, float64(h.TableBytes)/1e6, float64(h.WALBytes)/1e6, float64(h.StaleBytes)/1e6,
				float64(h.Settled)/1e6, h.LastHour.Millis, h.LastWeek.Millis, h.LastWeek.Epochs, h.Expired, h.WallMillis)
		}})
	if err != nil {
		return err
	}
	if err := report(res, *out); err != nil {
		return err
	}
	// Level from the policy's horizon plus a merge window on.
	lim := week.Limits{LevelFrom: int((pol.Keep + pol.MergeTo) / time.Hour), SizeFactor: 1.25, Window: 24, QueryFactor: 2, QuerySlackMillis: 20}
	if err := res.Check(lim); err != nil {
		return err
	}
	fmt.Println("checks passed: conservation exact, one cut per hour, size level, last-hour query flat")
	return nil
}

// report prints the run's summary, a line a simulated day, and writes
// its JSON and plots into dir.
func report(res *week.Result, dir string) error {
	fmt.Printf("%s\n%d hours: %d epochs left, the last %d; counted by the coordinator's metrics: %v scheduled cuts (%v superseded), %v epochs merged away, %v expired; %v wall\n",
		res.Conservation, res.Hours, len(res.Epochs), lastEpoch(res), res.Cuts, res.Superseded, res.MergedAway, res.ExpiredEpochs, res.Wall.Round(time.Second))
	fmt.Println("day | settled MB | epochs (merged) | last hour ms (median) | last week ms (median) | week's epochs | expired samples | wall s")
	for _, d := range res.Days() {
		fmt.Printf("%d | %.1f | %d (%d) | %.1f | %.1f | %d | %d | %.0f\n", d.Day, float64(d.SettledBytes)/1e6, d.Epochs, d.Merged,
			d.LastHourMs, d.LastWeekMs, d.WeekEpochs, d.Expired, d.WallSeconds)
	}
	for name, write := range map[string]func(io.Writer) error{
		"week.json":        res.WriteJSON,
		"week-size.svg":    res.WriteSizeSVG,
		"week-queries.svg": res.WriteQuerySVG,
	} {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func lastEpoch(res *week.Result) uint64 {
	if len(res.Epochs) == 0 {
		return 0
	}
	return res.Epochs[len(res.Epochs)-1].Number
}
