package profiledb

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"dcpi/analysis"
	"dcpi/analysis/report"
	"dcpi/hwsim/alpha"
	"dcpi/storage"
	"dcpi/wire"
)

// EmptyHint says why a selection that matched nothing did: a --host or
// --epoch the source does not hold, with the ones it does ("no samples for
// host alpha9; hosts in this database: alpha0, alpha1"). It is "" when
// every named host and epoch is known (or the source cannot say).
func EmptyHint(ctx context.Context, db DB, f storage.Query) string {
	return knownHint(ctx, f, db)
}

// SelectionHint is EmptyHint, and when the hosts and epochs are known, the
// images and events they hold (contentHint), reading the samples
// through src (db, or db with a symbol cache).
func SelectionHint(ctx context.Context, db DB, src analysis.Source, sel Selection) string {
	if h := EmptyHint(ctx, db, sel.Filter); h != "" {
		return h
	}
	return contentHint(ctx, src, sel, db.Where())
}

// contentHint says, for a selection that matched nothing because of its
// --image or --event, which images and events the same hosts, epochs and
// PIDs do hold samples of, most samples first ("images with samples in
// this database: /bin/sort, /vmunix"). It scans the profile without those
// two filters, which only an empty result pays for.
func contentHint(ctx context.Context, src analysis.Source, sel Selection, where string) string {
	if len(sel.Filter.Images) == 0 && len(sel.ImagePaths) == 0 && len(sel.Events) == 0 {
		return ""
	}
	q := sel.Filter
	q.Images, q.Events = nil, nil
	byImage, byEvent := map[wire.ImageKey]uint64{}, map[uint8]uint64{}
	if err := src.Profile(ctx, q, func(image wire.ImageKey, _ uint64, event uint8, _ string, n uint64) error {
		byImage[image] += n
		byEvent[event] += n
		return nil
	}); err != nil {
		return ""
	}
	var hints []string
	if len(sel.Filter.Images) > 0 || len(sel.ImagePaths) > 0 {
		var names []string
		for _, k := range mostFirst(byImage) {
			name := k.String()
			if r, err := src.Image(ctx, k); err == nil && r.Path != "" {
				name = r.Path
			}
			names = append(names, name)
		}
		hints = append(hints, fmt.Sprintf("images with samples in %s: %s", where, orNone(capList(names, 12))))
	}
	if len(sel.Events) > 0 {
		var names []string
		for _, e := range mostFirst(byEvent) {
			names = append(names, alpha.Event(e).String())
		}
		hints = append(hints, fmt.Sprintf("events with samples in %s: %s", where, orNone(names)))
	}
	return strings.Join(hints, "; ")
}

// ProcedureHint names the procedures with the most samples in sel, for a
// dcpi list whose procedures have none ("procedures with the most samples
// here: lap, slot, naive").
func ProcedureHint(ctx context.Context, src analysis.Source, sel Selection) string {
	t, err := report.Prof(ctx, src, report.ProfQuery{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths, Limit: 10})
	if err != nil {
		return ""
	}
	var names []string
	for _, r := range t.Rows {
		if r.Procedure != "" && !slices.Contains(names, r.Procedure) {
			names = append(names, r.Procedure)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "procedures with the most samples in the selection: " + strings.Join(names, ", ")
}

// mostFirst returns m's keys by count, most first.
func mostFirst[K comparable](m map[K]uint64) []K {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b K) int {
		if c := cmp.Compare(m[b], m[a]); c != 0 {
			return c
		}
		return cmp.Compare(fmt.Sprint(a), fmt.Sprint(b))
	})
	return keys
}

// capList keeps the first n names and says how many more there are.
func capList(names []string, n int) []string {
	if len(names) <= n {
		return names
	}
	return append(names[:n:n], fmt.Sprintf("and %d more", len(names)-n))
}

func knownHint(ctx context.Context, f storage.Query, db DB) string {
	where := db.Where()
	var hints []string
	if len(f.Hosts) > 0 {
		if known, err := db.Hosts(ctx); err == nil {
			for _, h := range f.Hosts {
				if !slices.Contains(known, h) {
					hints = append(hints, fmt.Sprintf("no samples for host %s; hosts in %s: %s", h, where, orNone(known)))
				}
			}
		}
	}
	if len(f.Epochs) > 0 {
		if known, err := db.EpochNumbers(ctx); err == nil {
			var missing []string
			for _, e := range f.Epochs {
				if !slices.Contains(known, e) {
					missing = append(missing, strconv.FormatUint(e, 10))
				}
			}
			if len(missing) > 0 {
				names := make([]string, len(known))
				for i, e := range known {
					names[i] = strconv.FormatUint(e, 10)
				}
				hints = append(hints, fmt.Sprintf("no epoch %s; epochs in %s: %s", strings.Join(missing, ", "), where, orNone(names)))
			}
		}
	}
	return strings.Join(hints, "; ")
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
