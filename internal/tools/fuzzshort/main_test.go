package main

import (
	"regexp"
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
