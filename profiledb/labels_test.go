package profiledb

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dcpi/coordinator"
	"dcpi/storage"
	"dcpi/wire"
)

// labelled is a database of three hosts: two with labels, one without.
func labelled() catalog {
	node := func(host string, labels map[string]string) coordinator.NodeInfo {
		return coordinator.NodeInfo{Node: storage.Node{Host: host, CPUs: 1, Labels: labels}}
	}
	return catalog{hosts: []string{"alpha0", "alpha1", "beta0"}, nodes: []coordinator.NodeInfo{
		node("alpha0", map[string]string{"service": "db", "version": "1.2"}),
		node("alpha1", map[string]string{"service": "web", "version": "1.10"}),
		node("beta0", nil),
	}}
}

// TestSelectHosts: a selector narrows the query to the matching hosts;
// one that matches none is ErrNoMatch naming the values that exist.
func TestSelectHosts(t *testing.T) {
	db := labelled()
	for _, c := range []struct {
		sel    []string
		labels map[string]string
		hosts  []string // --host given
		want   []string
	}{
		{sel: []string{`service=db`}, want: []string{"alpha0"}},
		{sel: []string{`version=~"1\\..*"`}, want: []string{"alpha0", "alpha1"}},
		{sel: []string{`version=~"1\\.1"`}, want: nil},
		{sel: []string{`service!=db`}, want: []string{"alpha1", "beta0"}},
		{sel: []string{`service=""`}, want: []string{"beta0"}},
		{sel: []string{`service=~".+"`, `version!="1.2"`}, want: []string{"alpha1"}},
		{sel: []string{`{host=~"alpha.*"}`}, want: []string{"alpha0", "alpha1"}},
		{labels: map[string]string{"service": "web"}, want: []string{"alpha1"}},
		{sel: []string{`service=~"db|web"`}, hosts: []string{"alpha1", "beta0"}, want: []string{"alpha1"}},
		{sel: []string{`service=db`}, hosts: []string{"alpha1"}, want: nil},
		{sel: []string{`zone=eu`}, want: nil},
	} {
		s, err := Filters{Select: c.sel, Labels: c.labels, Hosts: c.hosts}.Selection()
		if err != nil {
			t.Fatal(err)
		}
		err = SelectHosts(context.Background(), db, &s)
		if c.want == nil {
			const names = "host labels in this database: service=db, web; version=1.10, 1.2"
			if !errors.Is(err, ErrNoMatch) || !strings.Contains(err.Error(), names) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%v %v: %v; want ErrNoMatch naming %q in one line", c.sel, c.hosts, err, names)
			}
			continue
		}
		if err != nil || !slices.Equal(s.Filter.Hosts, c.want) {
			t.Errorf("%v %v: hosts %v, %v; want %v", c.sel, c.hosts, s.Filter.Hosts, err, c.want)
		}
	}
	// No selector: the query is left alone.
	s := Selection{}
	if err := SelectHosts(context.Background(), db, &s); err != nil || s.Filter.Hosts != nil {
		t.Errorf("no selector: %v, %v", s.Filter.Hosts, err)
	}
}

// TestSelectionRefusesBadSelectors: a malformed selector or label is
// refused by Selection, before any database is opened.
func TestSelectionRefusesBadSelectors(t *testing.T) {
	for _, f := range []Filters{
		{Select: []string{`service==db`}},
		{Select: []string{``}},
		{Select: []string{`version=~"("`}},
		{Labels: map[string]string{"rack-id": "r1"}},
	} {
		if _, err := f.Selection(); err == nil {
			t.Errorf("%+v: accepted", f)
		}
	}
}

// fleetDB is a local database of three hosts, as dcpi profile and dcpi
// node record them: alpha0 (service=db, version=1.2) has 60 samples in
// /bin/app and 10 in /bin/db, alpha1 (service=web, version=1.10) 30 in
// /bin/app, and beta0, registered with no labels, 5 in /bin/app.
func fleetDB(t *testing.T) *Local {
	t.Helper()
	db, err := storage.Open(filepath.Join(t.TempDir(), "db"), storage.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	app, dbi := wire.MustParseImageKey("buildid:0101"), wire.MustParseImageKey("buildid:0202")
	for _, r := range []*wire.ImageRecord{
		{Version: wire.Version, Key: app, Path: "/bin/app", TextStart: 0x120000000, TextEnd: 0x120001000, Base: 0x120000000,
			Symbols: []wire.Symbol{{Name: "work", Addr: 0x120000000, Size: 0x1000}}},
		{Version: wire.Version, Key: dbi, Path: "/bin/db", TextStart: 0x120000000, TextEnd: 0x120001000, Base: 0x120000000,
			Symbols: []wire.Symbol{{Name: "query", Addr: 0x120000000, Size: 0x1000}}},
	} {
		if err := db.PutImage(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []struct {
		host    string
		labels  map[string]string
		entries []wire.Entry
	}{
		{"alpha0", map[string]string{"service": "db", "version": "1.2"}, []wire.Entry{{Image: app, Offset: 0x10, Count: 60}, {Image: dbi, Offset: 0x20, Count: 10}}},
		{"alpha1", map[string]string{"service": "web", "version": "1.10"}, []wire.Entry{{Image: app, Offset: 0x10, Count: 30}}},
		{"beta0", nil, []wire.Entry{{Image: app, Offset: 0x10, Count: 5}}},
	} {
		if err := db.PutNode(storage.Node{Host: h.host, CPUs: 1, Labels: h.labels}); err != nil {
			t.Fatal(err)
		}
		b := &wire.Batch{Version: wire.FlatVersion, Host: h.host, Seq: 1, Epoch: 1, Entries: h.entries}
		b.Normalize()
		if _, err := db.ApplyBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	return NewLocal(db)
}

// TestLabelsKnownTotals: on a local database, selections and groupings
// by label give the totals the hosts were given.
func TestLabelsKnownTotals(t *testing.T) {
	db := fleetDB(t)
	total := func(f Filters, by string) *ProfReport {
		t.Helper()
		s, err := f.Selection()
		if err != nil {
			t.Fatal(err)
		}
		if err := SelectHosts(t.Context(), db, &s); err != nil {
			t.Fatal(err)
		}
		r, err := Prof(t.Context(), db, db, s, ProfOptions{By: by})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, c := range []struct {
		f    Filters
		want uint64
	}{
		{Filters{}, 105},
		{Filters{Select: []string{`service=db`}}, 70},
		{Filters{Labels: map[string]string{"service": "web"}}, 30},
		{Filters{Select: []string{`version=~"1\\..*"`}}, 100},
		{Filters{Select: []string{`service!=db`}}, 35},
		{Filters{Select: []string{`service=""`}}, 5},
		{Filters{Select: []string{`service=~"db|web"`}, Images: []string{"app"}}, 90},
	} {
		if r := total(c.f, "image"); r.Table.Columns[0].Total != c.want {
			t.Errorf("%+v: %d samples, want %d", c.f, r.Table.Columns[0].Total, c.want)
		}
	}
	groups := func(r *ProfReport) string {
		var parts []string
		for _, row := range r.Groups.Rows {
			parts = append(parts, fmt.Sprintf("%s=%d(%.2f%%)[%s]", row.Value, row.Counts[0], row.Percent[0], strings.Join(row.Hosts, " ")))
		}
		return fmt.Sprintf("%d: %s", r.Groups.Columns[0].Total, strings.Join(parts, ", "))
	}
	for _, c := range []struct {
		f    Filters
		by   string
		want string
	}{
		{Filters{}, "service", "105: db=70(66.67%)[alpha0], web=30(28.57%)[alpha1], =5(4.76%)[beta0]"},
		{Filters{Select: []string{`version=~"1\\..*"`}}, "service", "100: db=70(70.00%)[alpha0], web=30(30.00%)[alpha1]"},
		{Filters{Images: []string{"/bin/db"}}, "version", "10: 1.2=10(100.00%)[alpha0]"},
		{Filters{}, "host", "105: alpha0=70(66.67%)[alpha0], alpha1=30(28.57%)[alpha1], beta0=5(4.76%)[beta0]"},
		{Filters{Hosts: []string{"alpha1", "beta0"}}, "zone", "35: =35(100.00%)[alpha1 beta0]"},
	} {
		if got := groups(total(c.f, c.by)); got != c.want {
			t.Errorf("%+v by %s: %s, want %s", c.f, c.by, got, c.want)
		}
	}
	// --limit with --by LABEL keeps the top values; the rest is one count.
	s, _ := Filters{}.Selection()
	r, err := Prof(t.Context(), db, db, s, ProfOptions{By: "service", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := groups(r); got != "105: db=70(66.67%)[alpha0]" || r.Groups.Omitted != 2 || r.Groups.OmittedCounts[0] != 35 {
		t.Errorf("--limit 1 --by service: %s, %d omitted of %v", got, r.Groups.Omitted, r.Groups.OmittedCounts)
	}
	// A selector no host matches says so, naming the values there are.
	s, _ = Filters{Select: []string{`service=cache`}}.Selection()
	err = SelectHosts(t.Context(), db, &s)
	const want = `service="cache" selects no host; host labels in this database: service=db, web; version=1.10, 1.2`
	if !errors.Is(err, ErrNoMatch) || err.Error() != want {
		t.Errorf("no match: %v, want %q", err, want)
	}
}
