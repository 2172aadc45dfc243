// Command fuzzshort runs every Go fuzz target of the module for a short
// time each, so CI exercises the fuzzers (and their committed corpora)
// on every change. go test accepts one -fuzz target per package per run,
// which is why a tool lists the targets and runs them one by one.
//
//	go run ./internal/tools/fuzzshort [-fuzztime 3s] [packages]
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

func main() {
	fuzztime := flag.Duration("fuzztime", 3*time.Second, "how long to fuzz each target")
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./..."}
	}
	targets, err := listTargets(pkgs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fuzzshort:", err)
		os.Exit(2)
	}
	if len(targets) == 0 {
		fmt.Fprintln(os.Stderr, "fuzzshort: no fuzz targets found")
		os.Exit(2)
	}
	failed := 0
	for _, t := range targets {
		start := time.Now()
		out, err := fuzz(t, *fuzztime)
		if err != nil && spuriousDeadline(out) {
			// go test -fuzz can fail with "context deadline exceeded" when
			// -fuzztime ends while a worker is busy with a new input,
			// having found no failure: run the target once more.
			fmt.Printf("     %-40s %-24s the fuzzer's own deadline ended the run; again\n", t.pkg, t.name)
			out, err = fuzz(t, *fuzztime)
		}
		status := "ok"
		if err != nil {
			status = "FAIL"
			failed++
		}
		fmt.Printf("%-4s %-40s %-24s %5.1fs\n", status, t.pkg, t.name, time.Since(start).Seconds())
		if err != nil {
			os.Stdout.Write(out)
		}
	}
	fmt.Printf("fuzzshort: %d targets, %d failed\n", len(targets), failed)
	if failed > 0 {
		os.Exit(1)
	}
}

type target struct{ pkg, name string }

// fuzz runs one target. Minimizing is bounded by a count, not a time: by
// default the fuzzer may spend a minute shrinking one large interesting
// input (FuzzOpenImageFile's images are kilobytes), which is not what a
// short pass is for.
func fuzz(t target, d time.Duration) ([]byte, error) {
	cmd := exec.Command("go", "test", "-run", "^$", "-fuzz", "^"+t.name+"$", "-fuzztime", d.String(),
		"-fuzzminimizetime", "100x", t.pkg)
	return cmd.CombinedOutput()
}

// spuriousDeadline reports whether a failed fuzz run failed only on the
// fuzzer's deadline: no failing input was written.
func spuriousDeadline(out []byte) bool {
	return bytes.Contains(out, []byte("context deadline exceeded")) && !bytes.Contains(out, []byte("Failing input written to"))
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
