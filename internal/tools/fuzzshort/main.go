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
	"go/ast"
	"go/parser"
	"go/token"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	fuzztime := flag.Duration("fuzztime", 3*time.Second, "how long to fuzz each target")
	run := flag.String("run", "", "fuzz only the targets whose name matches this regexp")
	parallel := flag.Int("parallel", 0, "fuzzing workers per target (go test -parallel; 0: GOMAXPROCS)")
	minimize := flag.String("minimizetime", "100x", "go test -fuzzminimizetime: a count (100x) or a duration")
	budget := flag.Duration("budget", 0, "stop starting packages once this much time has passed (0: fuzz every package); the packages are taken in a rotated order (-rotate), so successive runs cover them all")
	rotate := flag.String("rotate", "", "with -budget, the key that picks the first package (default: the HEAD commit, else the date)")
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
	if *budget > 0 {
		key := *rotate
		if key == "" {
			key = rotationKey()
		}
		targets = rotatePackages(targets, key)
		fmt.Printf("fuzzshort: budget %s; packages in the order of rotation key %q, from %s\n", *budget, key, targets[0].pkg)
	}
	began := time.Now()
	var skipped []string
	opts := runOptions{fuzztime: *fuzztime, parallel: *parallel, minimize: *minimize}
	bins, err := os.MkdirTemp("", "fuzzshort")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fuzzshort:", err)
		os.Exit(2)
	}
	defer os.RemoveAll(bins)
	failed, fuzzed := 0, 0
	var totalExecs int64
	built := map[string]builtPackage{}
	for _, t := range targets {
		start := time.Now()
		b, ok := built[t.pkg]
		if !ok && *budget > 0 && len(built) > 0 && start.Sub(began) >= *budget {
			if len(skipped) == 0 || skipped[len(skipped)-1] != t.pkg {
				skipped = append(skipped, t.pkg)
			}
			continue
		}
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
		fuzzed++
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
	fmt.Printf("fuzzshort: %d of %d targets fuzzed, %d failed, %d execs\n", fuzzed, len(targets), failed, totalExecs)
	if len(skipped) > 0 {
		fmt.Printf("fuzzshort: the budget of %s was spent; not reached this time (a run with another rotation key starts elsewhere): %s\n", *budget, strings.Join(skipped, " "))
	}
	if failed > 0 {
		os.Exit(1)
	}
}

type target struct{ pkg, name string }

// rotatePackages keeps ts grouped by package in their order and starts
// at the package key picks, wrapping around.
func rotatePackages(ts []target, key string) []target {
	var pkgs []string
	for _, t := range ts {
		if len(pkgs) == 0 || pkgs[len(pkgs)-1] != t.pkg {
			pkgs = append(pkgs, t.pkg)
		}
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	first := pkgs[h.Sum32()%uint32(len(pkgs))]
	i := slices.IndexFunc(ts, func(t target) bool { return t.pkg == first })
	return append(slices.Clone(ts[i:]), ts[:i]...)
}

// rotationKey is the HEAD commit, so that each change fuzzes from its own
// starting package and a rerun of one commit repeats its choice; outside
// a git checkout, the date.
func rotationKey() string {
	if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	return time.Now().Format(time.DateOnly)
}

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
	cache, err := goCache()
	if err != nil {
		return nil, err
	}
	args := []string{"-test.run", "^$", "-test.fuzz", "^" + t.name + "$", "-test.fuzztime", o.fuzztime.String(),
		"-test.fuzzminimizetime", o.minimize, "-test.paniconexit0",
		"-test.fuzzcachedir", filepath.Join(cache, "fuzz", t.pkg)}
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

var goCache = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOCACHE: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
})

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

// listTargets finds the fuzz targets of pkgs in their test files'
// source: every top-level func FuzzXxx(f *testing.F). go test -list would
// link and run every package's test binary to print the same names (half
// a minute here).
func listTargets(pkgs []string) ([]target, error) {
	args := append([]string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .TestGoFiles \" \"}} {{join .XTestGoFiles \" \"}}"}, pkgs...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var targets []target
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 3 {
			continue
		}
		for _, file := range strings.Fields(f[2]) {
			names, err := fuzzTargets(filepath.Join(f[1], file))
			if err != nil {
				return nil, err
			}
			for _, n := range names {
				targets = append(targets, target{pkg: f[0], name: n})
			}
		}
	}
	return targets, sc.Err()
}

// fuzzTargets are the fuzz targets a Go test file declares, in order.
func fuzzTargets(path string) ([]string, error) {
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, d := range file.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Fuzz") || len(fn.Type.Params.List) != 1 {
			continue
		}
		star, ok := fn.Type.Params.List[0].Type.(*ast.StarExpr)
		if !ok {
			continue
		}
		if sel, ok := star.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "F" {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "testing" {
				names = append(names, fn.Name.Name)
			}
		}
	}
	return names, nil
}
