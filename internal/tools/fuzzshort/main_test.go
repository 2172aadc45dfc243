package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestLastProgressTakesTheFinalTotals(t *testing.T) {
	out := []byte(`fuzz: elapsed: 0s, gathering baseline coverage: 0/133 completed
fuzz: elapsed: 0s, gathering baseline coverage: 133/133 completed, now fuzzing with 1 workers
fuzz: elapsed: 3s, execs: 150237 (50074/sec), new interesting: 1 (total: 134)
fuzz: elapsed: 4s, execs: 165433 (41361/sec), new interesting: 3 (total: 136)
PASS
ok  	dcpi/internal/bincodec	4.012s
`)
	p, seen := lastProgress(out)
	if !seen {
		t.Fatal("no progress line seen")
	}
	want := progress{execs: 165433, newInteresting: 3, corpus: 136}
	if p != want {
		t.Errorf("lastProgress = %+v, want %+v", p, want)
	}
}

func TestLastProgressWithoutFuzzing(t *testing.T) {
	out := []byte("--- FAIL: FuzzX (0.00s)\n    x_test.go:9: boom\nFAIL\n")
	if p, seen := lastProgress(out); seen {
		t.Errorf("lastProgress = %+v, seen on output with no progress line", p)
	}
}

func TestSelectTargets(t *testing.T) {
	ts := []target{{"dcpi/wire", "FuzzBatch"}, {"dcpi/wire", "FuzzImageRecord"}, {"dcpi/loadgen", "FuzzDecode"}}
	if got := selectTargets(ts, nil); len(got) != 3 {
		t.Errorf("no regexp kept %d targets, want all 3", len(got))
	}
	got := selectTargets(ts, regexp.MustCompile("^FuzzBatch$|Decode"))
	if len(got) != 2 || got[0].name != "FuzzBatch" || got[1].name != "FuzzDecode" {
		t.Errorf("selectTargets = %v, want FuzzBatch and FuzzDecode", got)
	}
}

func TestRotatePackagesKeepsPackagesWhole(t *testing.T) {
	ts := []target{{"a", "FuzzA1"}, {"a", "FuzzA2"}, {"b", "FuzzB"}, {"c", "FuzzC1"}, {"c", "FuzzC2"}}
	firsts := map[string]bool{}
	for _, key := range []string{"", "x", "y", "z", "0123abc", "2026-11-29", "HEAD", "main"} {
		got := rotatePackages(ts, key)
		if len(got) != len(ts) {
			t.Fatalf("key %q: %d targets, want %d", key, len(got), len(ts))
		}
		firsts[got[0].pkg] = true
		// Each package's targets stay together and in order, and the
		// order of packages is the original one rotated.
		var order []string
		for i, tg := range got {
			if i == 0 || got[i-1].pkg != tg.pkg {
				order = append(order, tg.pkg)
			} else if got[i-1].name > tg.name {
				t.Errorf("key %q: %v out of order", key, got)
			}
		}
		if s := strings.Join(order, ""); len(order) != 3 || !strings.Contains("abcab", s) {
			t.Errorf("key %q: package order %v", key, order)
		}
	}
	if len(firsts) < 2 {
		t.Errorf("eight keys all started at %v", firsts)
	}
}

func TestFuzzTargetsFromSource(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import "testing"

func FuzzOne(f *testing.F) {}
func FuzzHelper(x int)     {}
func TestFuzzNot(t *testing.T) {}
func (r recv) FuzzMethod(f *testing.F) {}
func FuzzTwo(f *testing.F) {}
`
	path := filepath.Join(dir, "x_test.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := fuzzTargets(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "FuzzOne FuzzTwo" {
		t.Errorf("fuzzTargets = %v, want FuzzOne FuzzTwo", got)
	}
}

// TestListTargetsFindsThisModulesTargets: the source scan finds what go
// test -list would, here for two packages known to have targets.
func TestListTargetsFindsThisModulesTargets(t *testing.T) {
	got, err := listTargets([]string{"dcpi/loadgen", "dcpi/wire"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tg := range got {
		names = append(names, tg.pkg+"."+tg.name)
	}
	for _, want := range []string{"dcpi/loadgen.FuzzDecode", "dcpi/wire.FuzzBatch", "dcpi/wire.FuzzPathUpload"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s not among %v", want, names)
		}
	}
}
