package profiledb

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"dcpi/analysis"
	"dcpi/analysis/report"
	"dcpi/coordinator"
	"dcpi/profiledb/selector"
	"dcpi/storage"
)

// ErrNoMatch: a label selector matched no host, so the query would
// select nothing; the message names the labels the database holds.
var ErrNoMatch = errors.New("selects no host")

// SelectHosts narrows sel's hosts to those whose node-registry labels
// match sel.Labels (intersected with the hosts it already names), for a
// local database and a cluster alike, setting the process matchers aside
// in sel.Procs for SelectProcesses (processes.go). A selector that
// matches no host is ErrNoMatch, in one line naming the label values
// that exist.
func SelectHosts(ctx context.Context, db DB, sel *Selection) error {
	hosts, err := splitProcesses(ctx, db, sel)
	if err != nil {
		return err
	}
	return selectHosts(ctx, db, hosts, &sel.Filter)
}

func selectHosts(ctx context.Context, db DB, ls selector.Selector, q *storage.Query) error {
	if len(ls) == 0 {
		return nil
	}
	nodes, err := db.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("%s: reading the node registry: %w", ls, err)
	}
	hosts := []string{}
	for _, n := range nodes {
		if ls.Matches(hostLabel(n.Node)) && (q.Hosts == nil || slices.Contains(q.Hosts, n.Host)) {
			hosts = append(hosts, n.Host)
		}
	}
	if len(hosts) == 0 {
		within := ""
		if q.Hosts != nil {
			within = " among --host " + strings.Join(q.Hosts, ", ")
		}
		return fmt.Errorf("%s %w%s; %s", ls, ErrNoMatch, within, LabelsHeld(nodes, db.Where()))
	}
	q.Hosts = hosts
	return nil
}

// hostLabel reads a node's labels as a selector does: its registered
// labels, and "host", its name.
func hostLabel(n storage.Node) func(string) (string, bool) {
	return func(name string) (string, bool) {
		switch name {
		case "host":
			return n.Host, true
		case MachineLabel:
			kind := machineOf(n)
			return kind, kind != ""
		}
		v, ok := n.Labels[name]
		return v, ok
	}
}

// LabelsHeld names the label values nodes carry, for a message: "host
// labels in this database: service=db, web; zone=eu".
func LabelsHeld(nodes []coordinator.NodeInfo, where string) string {
	values := map[string][]string{}
	for _, n := range nodes {
		for k, v := range n.Labels {
			if !slices.Contains(values[k], v) {
				values[k] = append(values[k], v)
			}
		}
	}
	if len(values) == 0 {
		return fmt.Sprintf("no host in %s has labels (dcpi node --label K=V or the config's node.labels gives them)", where)
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(values)) {
		vs := values[k]
		slices.Sort(vs)
		parts = append(parts, k+"="+strings.Join(vs, ", "))
	}
	return fmt.Sprintf("host labels in %s: %s", where, strings.Join(parts, "; "))
}

// profGroups is dcpi prof --by LABEL: sel's samples per value of label
// over the selected hosts (every host when sel names none), a group per
// value; hosts without the label, or not in the node registry, form the
// group of "". The label "host" groups by host name.
func profGroups(ctx context.Context, db DB, src analysis.Source, sel Selection, label string) (*report.GroupTable, error) {
	q := report.ProfQuery{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths, By: report.ByImage}
	all, err := report.Prof(ctx, src, q)
	if err != nil || len(all.Columns) == 0 {
		return report.NewGroupTable(label, nil, nil), err
	}
	q.Events = nil
	for _, c := range all.Columns {
		q.Events = append(q.Events, c.Event)
	}
	hosts := sel.Filter.Hosts
	if hosts == nil {
		if hosts, err = db.Hosts(ctx); err != nil {
			return nil, err
		}
	}
	nodes, err := db.Nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("--by %s: reading the node registry: %w", label, err)
	}
	registered := map[string]storage.Node{}
	for _, n := range nodes {
		registered[n.Host] = n.Node
	}
	byValue := map[string][]string{}
	for _, h := range hosts {
		n, ok := registered[h]
		if !ok {
			n = storage.Node{Host: h}
		}
		v, _ := hostLabel(n)(label)
		byValue[v] = append(byValue[v], h)
	}
	var rows []report.GroupRow
	for _, v := range slices.Sorted(maps.Keys(byValue)) {
		g := q
		g.Filter.Hosts = byValue[v]
		t, err := report.Prof(ctx, src, g)
		if err != nil {
			return nil, err
		}
		row := report.GroupRow{Value: v, Hosts: byValue[v], Counts: make([]uint64, len(all.Columns))}
		for i, c := range all.Columns {
			for _, tc := range t.Columns {
				if tc.Event == c.Event {
					row.Counts[i] = tc.Total
				}
			}
		}
		rows = append(rows, row)
	}
	return report.NewGroupTable(label, all.Columns, rows), nil
}
