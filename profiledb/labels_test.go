package profiledb

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"dcpi/coordinator"
	"dcpi/storage"
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
