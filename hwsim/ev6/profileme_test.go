package ev6

import (
	"testing"

	"dcpi/hwsim/alpha"
)

// What ProfileMe reads from the observer's Records (hwsim's meObserver),
// checked against what the instruction stream itself says: on a loop
// with a data-dependent branch (so that it mispredicts, and wrong paths
// are fetched), every retired record's History is the directions of the
// conditional branches retired before it, derived from the retired
// records' successors alone; a wrong-path record's History is the
// mispredicted branch's predicted direction followed by the wrong-path
// branches' own; the Table 1 stages are in order; a load's effective
// address is the one the program computes.
func TestRecordsForProfileMe(t *testing.T) {
	bits := randomBits(2000, 7)
	body := []uint32{ldq(3, 4, 0), addqLit(4, 8, 4), 0, addqLit(5, 1, 5), bis(31, 31, 31)}
	code := loop(setupCode, 2000, body...)
	top := len(code) - 3 - len(body)
	code[top+2] = blbs(3, top+2, top+4)
	m := newMachine(t, DefaultParams(), code, dataSize)
	m.writeQuads(t, dataBase, bits)
	var recs []Record
	m.core.SetObserver(func(r Record) { recs = append(recs, r) })
	m.run(t)

	isBranch := func(pc uint64) bool {
		w, ok := m.cpu.FetchWord(pc)
		if !ok {
			t.Fatalf("no instruction at %#x", pc)
		}
		d := alpha.Decode(w, m.cpu.Model)
		return m.core.classes[min(int(d.Op), len(m.core.classes)-1)].base.Branch
	}
	var retired []int // indices of the retired records, in order
	for i, r := range recs {
		if r.Retired {
			retired = append(retired, i)
		}
	}
	var hist uint16
	var checked, wrong, loads int
	for k, i := range retired {
		r := recs[i]
		if r.History != hist {
			t.Fatalf("retired record %d at %#x: history %016b, the retired branches say %016b", i, r.PC, r.History, hist)
		}
		checked++
		if !(r.Fetch < r.Map && r.Map < r.Ready && r.Ready <= r.Issue && r.Issue < r.RetReady && r.RetReady <= r.Retire) {
			t.Fatalf("record %d: Table 1 stages out of order: %+v", i, r)
		}
		if r.Load {
			loads++
			if r.Addr < dataBase || r.Addr >= dataBase+dataSize || r.Done <= r.Issue {
				t.Fatalf("load record %d: address %#x, done %d after issue %d", i, r.Addr, r.Done, r.Issue)
			}
		}
		if k+1 == len(retired) {
			break
		}
		next := recs[retired[k+1]].PC
		if r.Taken != (next != r.PC+4) {
			t.Fatalf("record %d at %#x: taken %v, next retired %#x", i, r.PC, r.Taken, next)
		}
		if !isBranch(r.PC) {
			continue
		}
		hist = hist<<1 | uint16(b2i(next != r.PC+4))
		// The wrong path after a mispredicted conditional branch: the
		// first record holds the predicted direction, each later one the
		// predictions of the wrong-path branches before it.
		if !r.Mispredicted {
			continue
		}
		wantWrong := hist ^ 1
		for j := i + 1; j < len(recs) && !recs[j].Retired; j++ {
			w := recs[j]
			if w.History != wantWrong {
				t.Fatalf("wrong-path record %d at %#x after the branch at %#x: history %016b, want %016b", j, w.PC, r.PC, w.History, wantWrong)
			}
			wrong++
			if isBranch(w.PC) {
				wantWrong = wantWrong<<1 | uint16(b2i(w.Taken))
			}
		}
	}
	if checked < 10000 || wrong < 100 || loads < 2000 {
		t.Fatalf("checked %d retired records, %d wrong-path ones, %d loads: too few", checked, wrong, loads)
	}
}

// ProfileMe's counter fed from the observer as hwsim feeds it, on the
// loop with wrong paths: a pair's second is exactly its distance in
// fetched instructions (wrong-path ones counted) after its first; counting
// fetch opportunities, the chosen ones are one per S of the four a cycle
// the run's fetch cycles span, and the empty ones are spent.
func TestObserverFeedsProfileMe(t *testing.T) {
	bits := randomBits(2000, 11)
	body := []uint32{ldq(3, 4, 0), addqLit(4, 8, 4), 0, addqLit(5, 1, 5), bis(31, 31, 31)}
	code := loop(setupCode, 2000, body...)
	top := len(code) - 3 - len(body)
	code[top+2] = blbs(3, top+2, top+4)

	m := newMachine(t, DefaultParams(), code, dataSize)
	m.writeQuads(t, dataBase, bits)
	pairs, err := alpha.NewProfileMe(150, 250, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := pairs.SetPaired(128); err != nil {
		t.Fatal(err)
	}
	var n, firstAt, wrongTagged int
	var dist uint32
	var checked int
	m.core.SetObserver(func(r Record) {
		n++
		tagged, role, d := pairs.Fetch(r.Fetch)
		if !tagged {
			return
		}
		if !r.Retired {
			wrongTagged++
		}
		switch role {
		case alpha.MeFirst:
			firstAt, dist = n, d
		case alpha.MeSecond:
			if d != dist || n-firstAt != int(d) {
				t.Fatalf("second %d fetches after its first, distance %d (first's %d)", n-firstAt, d, dist)
			}
			checked++
		}
	})
	m.run(t)
	if checked < 50 || wrongTagged == 0 {
		t.Fatalf("%d pairs checked, %d wrong-path tags", checked, wrongTagged)
	}

	m = newMachine(t, DefaultParams(), code, dataSize)
	m.writeQuads(t, dataBase, bits)
	slots, _ := alpha.NewProfileMe(100, 100, 4, 3)
	slots.SetCountSlots(true)
	var first, last uint64
	m.core.SetObserver(func(r Record) {
		if first == 0 {
			first = r.Fetch
		}
		last = r.Fetch
		slots.Fetch(r.Fetch)
	})
	m.run(t)
	chosen := slots.Tags + slots.Empty
	want := 4 * (last - first + 1) / 100
	if chosen+1 < want || chosen > want+1 || slots.Empty == 0 {
		t.Fatalf("%d opportunities chosen (%d empty) over %d fetch cycles, want %d", chosen, slots.Empty, last-first+1, want)
	}
}
