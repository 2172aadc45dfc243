package profiledb

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"dcpi/profiledb/timerange"
	"dcpi/storage"
)

// FuzzParseSetSpec feeds the set specs (--set, and the web's diff
// selections a= and b=), the epoch ranges (--epochs, the web's epochs=)
// and the shared filters arbitrary strings: each parses or is refused
// with an error, never a panic; a range is lo <= hi and fewer than
// MaxEpochRange epochs, and prints back to itself; and no spec or
// selection, however many ranges it gives, lists more than MaxEpochRange
// epochs (each is a query entry, and the web parses whatever a URL says).
func FuzzParseSetSpec(f *testing.F) {
	for _, c := range [][3]string{
		{"host=alpha0,epochs=2-3,pid=7", "7", "2-4"},
		{"epoch=1", "", "5"},
		{"label=rack=r1,host=a", "1, 2", " 3 - 9 "},
		{"color=red", "x", "5-3"},
		{"host", "", "1-99999999"},
		{"pid=x", "18446744073709551615", "18446744073709551615"},
		{"epochs=0-1048575,epochs=0-1048575", "", "0-1048575,0-1048575"},
		{"since=2h,host=a", "2026-11-20T01:00:00Z", "02:30"},
		{"from=2026-11-20T01:30:00Z,to=2026-11-20T02:00:00Z", "-1h", "2026-11-20 01:00"},
		{"since=1h,epoch=2", "7d", "yesterday"},
	} {
		f.Add(c[0], c[1], c[2])
	}
	ctx := context.Background()
	db := catalog{hosts: []string{"alpha0", "alpha1"}, epochs: []uint64{1, 2, 3}}
	base := storage.Query{Events: []uint8{0}, Epochs: []uint64{9}}
	f.Fuzz(func(t *testing.T, spec, epochs, ranges string) {
		if lo, hi, err := ParseEpochRange(ranges); err == nil {
			if hi < lo || hi-lo >= MaxEpochRange {
				t.Fatalf("%q: range %d-%d", ranges, lo, hi)
			}
			if lo2, hi2, err := ParseEpochRange(fmt.Sprintf("%d-%d", lo, hi)); err != nil || lo2 != lo || hi2 != hi {
				t.Fatalf("%q: %d-%d parses back as %d-%d, %v", ranges, lo, hi, lo2, hi2, err)
			}
		}
		set, err := ParseSetSpec(ctx, db, base, spec)
		if err == nil {
			if !strings.HasPrefix(set.Name, spec) || len(set.Filter.Epochs) > MaxEpochRange || len(set.Filter.Epochs) == 0 {
				t.Fatalf("%q: set %q of %d epochs", spec, set.Name, len(set.Filter.Epochs))
			}
			// A time range names the set's epochs, and its name says so.
			timed := set.Name != spec
			if !strings.Contains(spec, "epoch") && !timed && (len(set.Filter.Epochs) != 1 || set.Filter.Epochs[0] != 9) {
				t.Fatalf("%q: the base's epochs became %v", spec, set.Filter.Epochs)
			}
		}
		var qf Filters
		if epochs != "" {
			qf.Epochs = strings.Split(epochs, ",")
		}
		if ranges != "" {
			qf.Ranges = strings.Split(ranges, ",")
		}
		if sel, err := qf.Selection(); err == nil && len(sel.Filter.Epochs) > MaxEpochRange {
			t.Fatalf("epochs %q ranges %q: %d epochs selected", epochs, ranges, len(sel.Filter.Epochs))
		}
		// The same strings as a time range: refused, or a range that
		// does not end before it starts.
		now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
		for _, fl := range []timerange.Flags{{Since: spec}, {From: epochs, To: ranges}, {Since: spec, From: epochs}} {
			if r, err := fl.Parse(now, time.UTC); err == nil && fl.Given() && (r.From.After(r.To) || r.IsZero()) {
				t.Fatalf("%+v: range %v to %v", fl, r.From, r.To)
			}
		}
		if d, err := timerange.ParseDuration(spec); err == nil && d <= 0 {
			t.Fatalf("%q: duration %v", spec, d)
		}
	})
}
