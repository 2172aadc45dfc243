package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/workloads/heldout"
)

// TestCalcPointerChase is the pointer-chasing loop (walklist's
// walk_list: nodes scattered over 8 MB, every step a D-cache and most a
// DTB miss, workloads/heldout). From CYCLES samples alone every issue
// point of the loop stalls, so no frequency can be trusted: the summary
// must say so and withhold its culprits, never blame Rb dependency. With
// ProfileMe's retire counts, or value sampling's load latencies, the
// frequency is measured and the summary names D-cache (and DTB) misses.
func TestCalcPointerChase(t *testing.T) {
	dir := t.TempDir()
	prog, err := heldout.WriteBinary(dir, "walklist")
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		Dynamic []struct {
			Cause  string
			Lo, Hi float64
		}
		Static []struct {
			Cause string
			Share float64
		}
		LowShare  float64 `json:"low_confidence_share"`
		LowReason string  `json:"low_confidence_reason"`
		Withheld  bool    `json:"culprits_withheld"`
		Measured  float64 `json:"measured_share"`
	}
	type report struct {
		Procedures []struct {
			Blocks []struct {
				Start      uint64
				Frequency  *float64
				Method     string
				Confidence string
			}
			Insns []struct {
				Addr    uint64
				Samples float64
				CPI     *float64
			} `json:"instructions"`
			Summary summary
		}
	}
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"cycles", nil},
		{"profileme", []string{"--profileme"}},
		{"loadlat", []string{"--values", "loadlat"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(dir, tc.name)
			args := append(append([]string{"profile", "-o", db, "--mux"}, tc.flags...), "--", prog)
			if _, stderr, err := run(t, args...); err != nil {
				t.Fatalf("dcpi %v: %v\n%s", args, err, stderr)
			}
			text, _, err := run(t, "calc", "--db", db, "walk_list", "--summary")
			if err != nil {
				t.Fatal(err)
			}
			js, _, err := run(t, "calc", "--db", db, "walk_list", "--json")
			if err != nil {
				t.Fatal(err)
			}
			var r report
			if err := json.Unmarshal([]byte(js), &r); err != nil || len(r.Procedures) != 1 {
				t.Fatalf("calc --json: %v\n%s", err, js)
			}
			p := r.Procedures[0]
			s := p.Summary
			share := map[string]float64{}
			for _, d := range s.Dynamic {
				share[d.Cause] = d.Lo
			}
			for _, st := range s.Static {
				share[st.Cause] = st.Share
			}
			t.Logf("%s", text)
			// Samples never sit on a block estimated not to run.
			for _, b := range p.Blocks {
				var samples float64
				for _, in := range p.Insns {
					if in.Addr >= b.Start && (len(p.Blocks) == 1 || in.Addr < nextStart(p.Blocks, b.Start)) {
						samples += in.Samples
					}
				}
				if samples > 0 && (b.Frequency == nil || *b.Frequency == 0) {
					t.Errorf("block %#x has %.0f samples and frequency %v (%s)", b.Start, samples, b.Frequency, b.Method)
				}
			}
			if tc.name == "cycles" {
				// Nothing measured: refuse to guess, and say why.
				if !s.Withheld || !strings.Contains(text, "*** culprits withheld") || !strings.Contains(s.LowReason, "issue points") {
					t.Errorf("CYCLES alone: want the culprits withheld with the reason, got withheld=%v reason %q", s.Withheld, s.LowReason)
				}
				if strings.Contains(text, "*** Rb dependency") {
					t.Errorf("CYCLES alone: the summary prints an Rb dependency row")
				}
				return
			}
			if s.Withheld {
				t.Fatalf("%s: culprits withheld (%s)", tc.name, s.LowReason)
			}
			if share["D-cache miss"] < 0.5 {
				t.Errorf("%s: D-cache miss at least %.1f%%, want >= 50%% (truth about 80%%)", tc.name, 100*share["D-cache miss"])
			}
			if share["Rb dependency"] > 0.05 {
				t.Errorf("%s: Rb dependency %.1f%%, want under 5%% (truth: 0)", tc.name, 100*share["Rb dependency"])
			}
			want := map[string]string{"profileme": "ProfileMe retire counts", "loadlat": "measured load latencies"}[tc.name]
			if !strings.Contains(text, want) {
				t.Errorf("%s: the summary does not say it used %s", tc.name, want)
			}
		})
	}
}

// nextStart is the start of the block after the one at start.
func nextStart(blocks []struct {
	Start      uint64
	Frequency  *float64
	Method     string
	Confidence string
}, start uint64) uint64 {
	next := ^uint64(0)
	for _, b := range blocks {
		if b.Start > start && b.Start < next {
			next = b.Start
		}
	}
	return next
}
