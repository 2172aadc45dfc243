// Command fuzzshort runs every Go fuzz target of the module for a set
// time each. With the default few seconds it is CI's short pass (make
// fuzz-short), which exercises the fuzzers and their committed corpora on
// every change; with minutes per target it is the longer campaign of
// docs/fuzzing.md (make fuzz-long). go test accepts one -fuzz target per
// package per run, which is why a tool lists the targets and runs them
// one by one. It builds each package's fuzzing test binary once (go test
// -c -fuzz) and runs it per target in the package's directory, as go test
// would: a build per target cost more than a short pass's fuzzing.
//
//	go run ./internal/tools/fuzzshort [-fuzztime 3s] [-run regexp] [-parallel n] [-minimizetime 100x] [packages]
//
// Each target gets one report line: status, package, target, wall time,
// and what the fuzzer's last progress line said (execs, and new
// interesting inputs it added to the GOCACHE corpus).
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

func main() {
	fuzztime := flag.Duration("fuzztime", 3*time.Second, "how long to fuzz each target")
	run := flag.String("run", "", "fuzz only the targets whose name matches this regexp")
	parallel := flag.Int("parallel", 0, "fuzzing workers per target (go test -parallel; 0: GOMAXPROCS)")
	minimize := flag.String("minimizetime", "100x", "go test -fuzzminimizetime: a count (100x) or a duration")
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./..."}
	}
	var only *regexp.Regexp
	if *run != "" {
		var err error
		if only, err = regexp.Compile(*run); err != nil {
			fmt.Fprintln(os.Stderr, "fuzzshort: -run:", err)
			os.Exit(2)
		}
	}
	targets, err := listTargets(pkgs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fuzzshort:", err)
		os.Exit(2)
	}
	targets = selectTargets(targets, only)
	if len(targets) == 0 {
		fmt.Fprintln(os.Stderr, "fuzzshort: no fuzz targets found")
		os.Exit(2)
	}
	opts := runOptions{fuzztime: *fuzztime, parallel: *parallel, minimize: *minimize}
	bins, err := os.MkdirTemp("", "fuzzshort")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fuzzshort:", err)
		os.Exit(2)
	}
	defer os.RemoveAll(bins)
	failed := 0
	var totalExecs int64
	built := map[string]builtPackage{}
	for _, t := range targets {
		start := time.Now()
		b, ok := built[t.pkg]
		if !ok {
			b = build(t.pkg, bins)
			built[t.pkg] = b
		}
		out, err := b.out, b.err
		if b.err == nil {
			out, err = fuzz(b, t, opts)
			if err != nil && spuriousDeadline(out) {
				// go test -fuzz can fail with "context deadline exceeded" when
				// -fuzztime ends while a worker is busy with a new input,
				// having found no failure: run the target once more.
				fmt.Printf("     %-40s %-24s the fuzzer's own deadline ended the run; again\n", t.pkg, t.name)
				out, err = fuzz(b, t, opts)
			}
		}
		status := "ok"
		if err != nil {
			status = "FAIL"
			failed++
		}
		p, seen := lastProgress(out)
		totalExecs += p.execs
		fmt.Printf("%-4s %-40s %-24s %6.1fs", status, t.pkg, t.name, time.Since(start).Seconds())
		if seen {
			fmt.Printf("  execs %d  new interesting %d (corpus %d)", p.execs, p.newInteresting, p.corpus)
		}
		fmt.Println()
		if err != nil {
			os.Stdout.Write(out)
		}
	}
	fmt.Printf("fuzzshort: %d targets, %d failed, %d execs\n", len(targets), failed, totalExecs)
	if failed > 0 {
		os.Exit(1)
	}
}

type target struct{ pkg, name string }

type runOptions struct {
	fuzztime time.Duration
	parallel int
	minimize string
}

// builtPackage is a package's fuzzing test binary, or why it did not
// build (out is the compiler's output then).
type builtPackage struct {
	bin, dir string
	out      []byte
	err      error
}

// build compiles pkg's test binary with the fuzzing instrumentation go
// test -fuzz adds (-fuzz with -c builds it and runs nothing) into bins.
func build(pkg, bins string) builtPackage {
	dir, err := exec.Command("go", "list", "-f", "{{.Dir}}", pkg).Output()
	if err != nil {
		return builtPackage{err: fmt.Errorf("go list %s: %w", pkg, err)}
	}
	bin := filepath.Join(bins, strings.NewReplacer("/", "_", ".", "_").Replace(pkg)+".test")
	out, err := exec.Command("go", "test", "-c", "-fuzz", ".", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		return builtPackage{out: out, err: fmt.Errorf("go test -c -fuzz %s: %w", pkg, err)}
	}
	return builtPackage{bin: bin, dir: strings.TrimSpace(string(dir))}
}

// fuzz runs one target with its package's binary, in the package's
// directory (where its corpus is, and where a failing input is written),
// with the fuzz cache go test gives it. Minimizing is bounded by a count,
// not a time, by default: the fuzzer may otherwise spend a minute
// shrinking one large interesting input (FuzzOpenImageFile's images are
// kilobytes), which is not what a short pass is for.
func fuzz(b builtPackage, t target, o runOptions) ([]byte, error) {
	cache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOCACHE: %w", err)
	}
	args := []string{"-test.run", "^$", "-test.fuzz", "^" + t.name + "$", "-test.fuzztime", o.fuzztime.String(),
		"-test.fuzzminimizetime", o.minimize, "-test.paniconexit0",
		"-test.fuzzcachedir", filepath.Join(strings.TrimSpace(string(cache)), "fuzz", t.pkg)}
	if o.parallel > 0 {
		args = append(args, "-test.parallel", strconv.Itoa(o.parallel))
	}
	// go test's default 10-minute timeout would cut a long campaign's
	// target short; the fuzz time itself bounds the run.
	args = append(args, "-test.timeout", (o.fuzztime + 10*time.Minute).String())
	cmd := exec.Command(b.bin, args...)
	cmd.Dir = b.dir
	return cmd.CombinedOutput()
}

// selectTargets keeps the targets whose name matches only (all of them
// when only is nil).
func selectTargets(ts []target, only *regexp.Regexp) []target {
	if only == nil {
		return ts
	}
	var kept []target
	for _, t := range ts {
		if only.MatchString(t.name) {
			kept = append(kept, t)
		}
	}
	return kept
}

// spuriousDeadline reports whether a failed fuzz run failed only on the
// fuzzer's deadline: no failing input was written.
func spuriousDeadline(out []byte) bool {
	return bytes.Contains(out, []byte("context deadline exceeded")) && !bytes.Contains(out, []byte("Failing input written to"))
}

// progress is what one of the fuzzer's progress lines says:
//
//	fuzz: elapsed: 3s, execs: 1234 (411/sec), new interesting: 2 (total: 9)
type progress struct {
	execs, newInteresting, corpus int64
}

var progressLine = regexp.MustCompile(`^fuzz: elapsed: \S+, execs: (\d+) \([^)]*\), new interesting: (\d+) \(total: (\d+)\)`)

// lastProgress returns the last progress line of a run's output; the
// fuzzer prints one every few seconds and a final one when it stops, each
// with running totals. seen is false when the run printed none (it failed
// before fuzzing, or ended inside the baseline coverage pass).
func lastProgress(out []byte) (p progress, seen bool) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := progressLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		var q progress
		var err error
		if q.execs, err = strconv.ParseInt(m[1], 10, 64); err != nil {
			continue
		}
		if q.newInteresting, err = strconv.ParseInt(m[2], 10, 64); err != nil {
			continue
		}
		if q.corpus, err = strconv.ParseInt(m[3], 10, 64); err != nil {
			continue
		}
		p, seen = q, true
	}
	return p, seen
}

// listTargets asks go test for the fuzz targets of each package; go test
// -list prints the matching names, then "ok <pkg> <time>" for each package.
func listTargets(pkgs []string) ([]target, error) {
	args := append([]string{"test", "-run", "^$", "-list", "^Fuzz"}, pkgs...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("go test -list: %w", err)
	}
	var names []string
	var targets []target
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Fuzz"):
			names = append(names, line)
		case strings.HasPrefix(line, "ok "):
			f := strings.Fields(line)
			for _, n := range names {
				targets = append(targets, target{pkg: f[1], name: n})
			}
			names = names[:0]
		case strings.HasPrefix(line, "?"), line == "":
		}
	}
	return targets, sc.Err()
}
