package wire_test

import (
	"slices"
	"testing"

	"dcpi/internal/testrand"
	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// TestUnionLenCountsTheMerge: UnionLen of two normalized entry lists is
// the length Normalize leaves of their concatenation, over lists that
// share none, some or all of their keys.
func TestUnionLenCountsTheMerge(t *testing.T) {
	r := testrand.New(t)
	for range 300 {
		o := wiretest.Options{MaxEntries: r.IntN(60), Images: wiretest.Keys(1 + r.IntN(3)), Events: 1 + r.IntN(2), Offsets: 1 + r.IntN(40), MaxCount: 5}
		a, b := wiretest.RandBatch(r, o), wiretest.RandBatch(r, o)
		a.Normalize()
		b.Normalize()
		both := &wire.Batch{Entries: append(slices.Clone(a.Entries), b.Entries...)}
		both.Normalize()
		if got, want := wire.UnionLen(a.Entries, b.Entries), len(both.Entries); got != want {
			t.Fatalf("UnionLen of %d and %d entries = %d, Normalize leaves %d", len(a.Entries), len(b.Entries), got, want)
		}
		if got := wire.UnionLen(a.Entries, a.Entries); got != len(a.Entries) {
			t.Fatalf("UnionLen of a list with itself = %d, want %d", got, len(a.Entries))
		}
	}
}
