package hwsim_test

import (
	"bytes"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/workloads"
)

// TestValueTruthConsistent checks value sampling's ground truth on real
// runs against the rest of the ground truth and against the semantics of
// the instructions: every register-writing instruction has a result per
// execution and every load a latency and a level per load event; the
// levels are at most the miss events say (a memory access is a B-cache
// miss); each level's latencies are at least that level's load-to-use
// latency; and where an instruction's result follows from its operand —
// a move (bis zero,rb,rc) or an lda, its value plus the displacement —
// the two histograms agree value for value, which an operand read after
// the instruction wrote its register (lda r1,8(r1)) or a result read
// before would break.
func TestValueTruthConsistent(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"ptrchase", []string{"16384", "200000"}},
		{"hashdb", []string{"2000", "20000"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			image, err := workloads.Binary(c.name)
			if err != nil {
				t.Fatal(err)
			}
			words := textWords(t, image)
			m := truthRun(t, c.name, true, c.args...)
			g := m.GroundTruth()["/bin/"+c.name]
			v := m.ValueTruth()["/bin/"+c.name]
			if g == nil || v == nil || len(v.PCs) == 0 {
				t.Fatal("no value truth")
			}
			minLat := [alpha.NumLevels]uint64{3, 9, 31, 143}
			var dhit [2]uint64               // D-cache hits not 3 cycles (with or without a DTB miss)
			var full [alpha.NumLevels]uint64 // executions that took at least their level's full latency
			var loads, moves, ldas, levels [alpha.NumLevels + 1]uint64
			for _, pc := range slices.Sorted(maps.Keys(g.PCs)) {
				tr := g.PCs[pc]
				w, ok := words[pc]
				if !ok || tr.Executed == 0 {
					continue
				}
				d := alpha.Decode(w, alpha.EV5)
				cl := alpha.ClassOf(d.Op)
				pv := v.PCs[pc]
				if pv == nil {
					t.Fatalf("%#x executed %d times, no value truth", pc, tr.Executed)
				}
				if cl.Writes != 0 && pv.Result.Total() != tr.Executed {
					t.Errorf("%#x: %d results, %d executions", pc, pv.Result.Total(), tr.Executed)
				}
				if cl.ReadsA && pv.OperandA.Total() != tr.Executed {
					t.Errorf("%#x: %d operands a, %d executions", pc, pv.OperandA.Total(), tr.Executed)
				}
				var sum uint64
				for lv, n := range pv.Levels {
					sum += n
					if pv.LevelLatency[lv].Total() != n {
						t.Errorf("%#x: level %d: %d executions, %d latencies", pc, lv, n, pv.LevelLatency[lv].Total())
					}
					for _, e := range pv.LevelLatency[lv].Values {
						if e.Value < 3 {
							t.Errorf("%#x: level %d latency %d under a D-cache hit's 3", pc, lv, e.Value)
						}
						if lv == alpha.LevelDcache && e.Value != 3 && e.Value != 3+35 {
							dhit[1]++
						}
						if e.Value >= minLat[lv] {
							full[lv] += e.Count
						}
					}
					levels[lv] += n
				}
				if sum != tr.Events[alpha.EvLoads] || pv.Latency.Total() != sum {
					t.Errorf("%#x: levels %v (%d latencies), %d load events", pc, pv.Levels, pv.Latency.Total(), tr.Events[alpha.EvLoads])
				}
				if pv.Levels[alpha.LevelMemory] > tr.Events[alpha.EvBMiss] {
					t.Errorf("%#x: %d from memory, %d B-cache misses", pc, pv.Levels[alpha.LevelMemory], tr.Events[alpha.EvBMiss])
				}
				if sum > 0 {
					loads[0]++
				}
				// Results that follow from operand b, value for value.
				var off uint64
				switch {
				case d.Op == alpha.OpBIS && d.Ra == 31 && !d.Lit:
					moves[0]++
				case d.Op == alpha.OpLDA && d.Rb != 31:
					off = uint64(d.Imm)
					ldas[0]++
				default:
					continue
				}
				if pv.Result.Other != 0 || pv.OperandB.Other != 0 {
					continue
				}
				want := map[uint64]uint64{}
				for _, e := range pv.OperandB.Values {
					want[e.Value+off] += e.Count
				}
				for _, e := range pv.Result.Values {
					if want[e.Value] != e.Count {
						t.Fatalf("%#x (%v): result %#x %d times; operand b gives it %d times", pc, d.Op, e.Value, e.Count, want[e.Value])
					}
				}
				if d.Rb == d.Ra {
					ldas[1]++
				}
			}
			if loads[0] == 0 || moves[0]+ldas[0] == 0 || levels[alpha.LevelMemory] == 0 {
				t.Fatalf("nothing checked: %d loads, %d moves, %d ldas, levels %v", loads[0], moves[0], ldas[0], levels)
			}
			for lv := range alpha.NumLevels {
				// Fills already in flight make some faster; most pay the level's latency.
				if 2*full[lv] < levels[lv] {
					t.Errorf("level %d: only %d of %d executions took its %d cycles", lv, full[lv], levels[lv], minLat[lv])
				}
			}
			if dhit[1] > 0 {
				t.Errorf("%d D-cache hit latencies of other than 3 or 38 cycles", dhit[1])
			}
			t.Logf("levels: %v at least the level's full latency", full)
			t.Logf("%d loads (levels %v), %d moves, %d ldas (%d onto their base)", loads[0], levels[:alpha.NumLevels], moves[0], ldas[0], ldas[1])
		})
	}
}

// TestValueTruthFileRoundTrip writes a real run's value truth and reads
// it back: the same histograms (the per-level latencies are not in the
// file), and a file written from what was read is the same bytes. Bad
// files get errors naming the line.
func TestValueTruthFileRoundTrip(t *testing.T) {
	m := truthRun(t, "hashdb", true, "2000", "5000")
	var buf bytes.Buffer
	if err := hwsim.WriteValueTruthOf(&buf, m); err != nil {
		t.Fatal(err)
	}
	got, err := hwsim.ReadValueTruth(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for path, g := range m.ValueTruth() {
		for pc, want := range g.PCs {
			w := *want
			w.LevelLatency = [alpha.NumLevels]alpha.Histogram{}
			have := got[path].PCs[pc]
			if w.Result.Total()+w.OperandA.Total()+w.OperandB.Total()+w.Latency.Total() == 0 {
				continue
			}
			if have == nil || !reflect.DeepEqual(*have, w) {
				t.Fatalf("%s %#x: read %+v, wrote %+v", path, pc, have, w)
			}
		}
	}
	var again bytes.Buffer
	if err := hwsim.EncodeValueTruth(&again, got); err != nil || !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Fatalf("written twice, the file differs: %v", err)
	}
	for _, bad := range []struct{ file, want string }{
		{"", "empty"},
		{"dcpi-ground-truth v3\n", "not a value truth file"},
		{hwsim.ValueTruthVersion + "\n[loads]\nimage\tpc\n", "line 3: column names"},
		{hwsim.ValueTruthVersion + "\n[values]\nimage\tpc\tkind\ttotal\tother\tvalues\n/x\t0x10\tresult\t5\t0\t0x1:4\n", "line 4: total"},
		{hwsim.ValueTruthVersion + "\n[values]\nimage\tpc\tkind\ttotal\tother\tvalues\n/x\t0x10\tfoo\t4\t0\t0x1:4\n", "kind"},
		{hwsim.ValueTruthVersion + "\n/x\t0x10\n", "before any section"},
	} {
		if _, err := hwsim.ReadValueTruth(strings.NewReader(bad.file)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.file, err, bad.want)
		}
	}
}
