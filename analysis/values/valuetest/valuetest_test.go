package valuetest

import (
	"testing"

	"dcpi/analysis/values"
	"dcpi/hwsim/elfimage"
	"dcpi/internal/hotlist"
	"dcpi/workloads"
)

// TestCompareLevelsCanFail: a list matching the truth passes, one whose
// memory share is off by far more than its error fails, naming the
// levels.
func TestCompareLevelsCanFail(t *testing.T) {
	var l hotlist.List
	coin := hotlist.NewCoin(1)
	for range 700 {
		l.Offer(3, coin) // D-cache
	}
	for range 300 {
		l.Offer(143, coin) // memory
	}
	if _, err := CompareLevels(&l, [values.NumLevels]uint64{7000, 0, 0, 3000}); err != nil {
		t.Fatalf("matching truth refused: %v", err)
	}
	_, err := CompareLevels(&l, [values.NumLevels]uint64{9000, 0, 0, 1000})
	if err == nil {
		t.Fatal("a memory share of 0.3 against a truth of 0.1 passed")
	}
	t.Log(err)
}

// TestSameLineFollowerThroughTheLoop: hashdb's chain walk loads 0(t0) at
// 0x120000de8 after the previous iteration loaded 8(t0) at 0x120000df8
// (the loop's back edge runs between them), so it is a follower; the
// first load of the line, 8(t0), and slot's hash-table load are not.
func TestSameLineFollowerThroughTheLoop(t *testing.T) {
	data, err := workloads.Binary("hashdb")
	if err != nil {
		t.Fatal(err)
	}
	im, err := elfimage.Parse(data, "/bin/hashdb")
	if err != nil {
		t.Fatal(err)
	}
	if !SameLineFollower(im, 0x120000de8) {
		t.Error("0x120000de8 (ldq t0,0(t0) after ldq t1,8(t0) across the back edge) is not a follower")
	}
	for _, pc := range []uint64{0x120000df8, 0x120000dc8} {
		if SameLineFollower(im, pc) {
			t.Errorf("%#x taken for a follower", pc)
		}
	}
}

// TestSameLineFollowerNotAfterTheNextNode: ptrchase's chase loop loads
// 16(v0) at 0x120000940 after the previous iteration's ldq v0,0(v0)
// (across the back edge), which moved v0 to the next node: not a
// follower; the ldq v0,0(v0) at 0x12000094c after 16(v0) of the same v0
// is one.
func TestSameLineFollowerNotAfterTheNextNode(t *testing.T) {
	data, err := workloads.Binary("ptrchase")
	if err != nil {
		t.Fatal(err)
	}
	im, err := elfimage.Parse(data, "/bin/ptrchase")
	if err != nil {
		t.Fatal(err)
	}
	if SameLineFollower(im, 0x120000940) {
		t.Error("0x120000940 (ldq t2,16(v0) after ldq v0,0(v0) moved v0) taken for a follower")
	}
	if !SameLineFollower(im, 0x12000094c) {
		t.Error("0x12000094c (ldq v0,0(v0) after ldq t2,16(v0)) is not a follower")
	}
}
