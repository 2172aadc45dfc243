package profiledb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"dcpi/analysis"
	"dcpi/analysis/report"
	"dcpi/profiledb/selector"
	"dcpi/storage"
)

// The process dimension: per process (host, PID) its binary and the
// user's process labels, from the nodes' process records
// (wire.ProcessRecord). A selector's matcher is a process matcher when
// it names binary, pid, or a label some process record carries; the
// rest match hosts (SelectHosts). A process matcher's label is the
// process's own, else its host's (a process inherits its host's labels,
// as a Prometheus target's labels reach its series). binary is the
// binary's full path: a base name is a regexp, binary=~".*/db".
//
// Only the samples of images kept per process (node.per_process) carry a
// PID, so a process selector selects those alone and says how many
// samples it could not place.
//
// A per-thread node (node.per_thread) stores a thread's ID where the PID
// would be and publishes a record per thread naming its process
// (wire.ProcessThreadVersion): pid is then the record's process, so pid=
// and --by pid take in every thread of the process, and tid (or thread)
// is the record's own ID, which --by thread groups by. A record of a node
// that is not per-thread has no tid: its samples are all its threads'.

// ProcessSource lists the process records of hosts (nil: every host's).
// Local and Cluster implement it.
type ProcessSource interface {
	Processes(ctx context.Context, hosts []string) ([]storage.Process, error)
}

// ErrNoProcess: a process selector matched no process, so the query
// would select nothing; the message names what the records hold.
var ErrNoProcess = errors.New("selects no process")

// Processes lists the process records of hosts (nil: every host's).
func (l *Local) Processes(_ context.Context, hosts []string) ([]storage.Process, error) {
	return l.DB.Processes(hosts)
}

// Processes asks a replica (the leader when linearizable) for the
// process records of hosts (nil: every host's).
func (c *Cluster) Processes(ctx context.Context, hosts []string) ([]storage.Process, error) {
	return c.Client.Processes(ctx, hosts, c.Linearizable)
}

// processDims are the names that are always a process's.
var processDims = []string{"binary", "pid", "tid", "thread"}

// isPerID reports whether a process dimension's values are per host (a
// PID or TID names a task of one host only).
func isPerID(label string) bool { return label == "pid" || label == "tid" || label == "thread" }

// processes reads the process records of hosts, or says the database
// keeps none.
func processes(ctx context.Context, db DB, hosts []string) ([]storage.Process, error) {
	ps, ok := db.(ProcessSource)
	if !ok {
		return nil, fmt.Errorf("%s keeps no process records", db.Where())
	}
	return ps.Processes(ctx, hosts)
}

// isProcessName reports whether a matcher or --by on name reads the
// process dimension: binary, pid, or a label of some record in recs.
func isProcessName(name string, recs []storage.Process) bool {
	if slices.Contains(processDims, name) {
		return true
	}
	for i := range recs {
		if _, ok := recs[i].Labels[name]; ok {
			return true
		}
	}
	return false
}

// splitProcesses moves sel.Labels' process matchers to sel.Procs and
// returns the host matchers. It reads the records only when a selector
// was given.
func splitProcesses(ctx context.Context, db DB, sel *Selection) (selector.Selector, error) {
	if len(sel.Labels) == 0 {
		return nil, nil
	}
	var recs []storage.Process
	if _, ok := db.(ProcessSource); ok {
		var err error
		if recs, err = processes(ctx, db, nil); err != nil {
			return nil, fmt.Errorf("%s: reading the process records: %w", sel.Labels, err)
		}
	}
	var hosts selector.Selector
	sel.Procs = nil
	for _, m := range sel.Labels {
		if isProcessName(m.Name, recs) {
			sel.Procs = append(sel.Procs, m)
		} else {
			hosts = append(hosts, m)
		}
	}
	return hosts, nil
}

// processLabel reads a process's labels as a selector does: binary, pid
// (a thread's record's process), tid and thread (a thread's record's
// own ID; none for a process's record), host, its own labels, else its
// host's.
func processLabel(p *storage.Process, node storage.Node) func(string) (string, bool) {
	return func(name string) (string, bool) {
		switch name {
		case "binary":
			return p.Binary, true
		case "pid":
			return strconv.FormatUint(uint64(p.ProcessPID()), 10), true
		case "tid", "thread":
			if !p.Thread() {
				return "", false
			}
			return strconv.FormatUint(uint64(p.PID), 10), true
		case "host":
			return p.Host, true
		}
		if v, ok := p.Labels[name]; ok {
			return v, true
		}
		v, ok := node.Labels[name]
		return v, ok
	}
}

// nodeRegistry is the node records by host.
func nodeRegistry(ctx context.Context, db DB) (map[string]storage.Node, error) {
	nodes, err := db.Nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the node registry: %w", err)
	}
	out := map[string]storage.Node{}
	for _, n := range nodes {
		out[n.Host] = n.Node
	}
	return out, nil
}

// SelectProcesses narrows sel to the processes sel.Procs matches (after
// SelectHosts, which sets it, and SelectTime): Filter.HostPIDs becomes
// their (host, PID) pairs and Filter.Hosts their hosts. A selector that
// matches no process is ErrNoProcess, in one line naming the binaries
// and process labels there are. When the selection holds samples with no
// process (of images not kept per process), it says how many on w, in
// one line.
func SelectProcesses(ctx context.Context, db DB, sel *Selection, w io.Writer) error {
	if len(sel.Procs) == 0 {
		return nil
	}
	recs, err := processes(ctx, db, sel.Filter.Hosts)
	if err != nil {
		return fmt.Errorf("%s: %w", sel.Procs, err)
	}
	nodes, err := nodeRegistry(ctx, db)
	if err != nil {
		return fmt.Errorf("%s: %w", sel.Procs, err)
	}
	pairs := map[string][]uint32{}
	for i := range recs {
		p := &recs[i]
		if sel.Procs.Matches(processLabel(p, nodes[p.Host])) && !slices.Contains(pairs[p.Host], p.PID) {
			pairs[p.Host] = append(pairs[p.Host], p.PID)
		}
	}
	if len(pairs) == 0 {
		return fmt.Errorf("%s %w; %s", sel.Procs, ErrNoProcess, ProcessesHeld(recs, db.Where()))
	}
	// Samples with no process: those of the selection's hosts without
	// PID, counted before the selection is narrowed to the pairs.
	unplaced := sel.Filter
	unplaced.Hosts = slices.Sorted(maps.Keys(pairs))
	unplaced.PIDs = []uint32{0}
	n, err := db.Totals(ctx, unplaced)
	if err != nil {
		return err
	}
	sel.Filter.HostPIDs = pairs
	sel.Filter.Hosts = unplaced.Hosts
	if n > 0 {
		fmt.Fprintf(w, "%s selects samples of images kept per process (node.per_process); %s samples of other images have no process\n",
			strings.Join(sel.Procs.Names(), "=, ")+"=", commas(n))
	}
	return nil
}

// maxHeld bounds the values ProcessesHeld names per label.
const maxHeld = 8

// ProcessesHeld names what process records hold, for a message:
// "processes in this database: binary=/bin/a, /bin/b; role=primary".
func ProcessesHeld(recs []storage.Process, where string) string {
	if len(recs) == 0 {
		return fmt.Sprintf("%s has no process records (nodes publish them: docs/node.md)", where)
	}
	values := map[string][]string{}
	add := func(k, v string) {
		if !slices.Contains(values[k], v) {
			values[k] = append(values[k], v)
		}
	}
	for _, p := range recs {
		add("binary", p.Binary)
		for k, v := range p.Labels {
			add(k, v)
		}
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(values)) {
		vs := values[k]
		slices.Sort(vs)
		more := ""
		if len(vs) > maxHeld {
			more = fmt.Sprintf(" and %d more", len(vs)-maxHeld)
			vs = vs[:maxHeld]
		}
		parts = append(parts, k+"="+strings.Join(vs, ", ")+more)
	}
	return fmt.Sprintf("processes in %s: %s", where, strings.Join(parts, "; "))
}

// Select applies the selection's labels, time range and processes once
// the database is open: SelectHosts, SelectTime (saying on w what the
// range covered), then SelectProcesses.
func Select(ctx context.Context, db DB, sel *Selection, w io.Writer) error {
	if err := SelectHosts(ctx, db, sel); err != nil {
		return err
	}
	if err := SelectTime(ctx, db, sel, w); err != nil {
		return err
	}
	return SelectProcesses(ctx, db, sel, w)
}

// isProcessGroup reports whether --by label groups by process.
func isProcessGroup(ctx context.Context, db DB, label string) (bool, error) {
	if slices.Contains(processDims, label) {
		return true, nil
	}
	if label == "host" {
		return false, nil
	}
	if _, ok := db.(ProcessSource); !ok {
		return false, nil
	}
	recs, err := processes(ctx, db, nil)
	return isProcessName(label, recs), err
}

// groupBy is dcpi prof --by LABEL: by process (procGroups) for binary,
// pid and process labels, else by host (profGroups).
func groupBy(ctx context.Context, db DB, src analysis.Source, sel Selection, label string) (*report.GroupTable, error) {
	proc, err := isProcessGroup(ctx, db, label)
	if err != nil {
		return nil, fmt.Errorf("--by %s: reading the process records: %w", label, err)
	}
	if !proc {
		return profGroups(ctx, db, src, sel, label)
	}
	return procGroups(ctx, db, src, sel, label)
}

// procGroups groups sel's samples by a process dimension: a group per
// value of label over the selected processes (pid, tid and thread: one
// per host and ID), and the group of "" for samples no process record names — those
// of images not kept per process, and any whose record is gone — so the
// groups add up to the selection.
func procGroups(ctx context.Context, db DB, src analysis.Source, sel Selection, label string) (*report.GroupTable, error) {
	q := report.ProfQuery{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths, By: report.ByImage}
	all, err := report.Prof(ctx, src, q)
	if err != nil || len(all.Columns) == 0 {
		return report.NewGroupTable(label, nil, nil), err
	}
	q.Events = nil
	for _, c := range all.Columns {
		q.Events = append(q.Events, c.Event)
	}
	recs, err := processes(ctx, db, sel.Filter.Hosts)
	if err != nil {
		return nil, fmt.Errorf("--by %s: %w", label, err)
	}
	nodes, err := nodeRegistry(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("--by %s: %w", label, err)
	}
	type group struct {
		value string
		host  string // pid: one group per host
	}
	byValue := map[group]map[string][]uint32{}
	for i := range recs {
		p := &recs[i]
		if hp := sel.Filter.HostPIDs; hp != nil && !slices.Contains(hp[p.Host], p.PID) {
			continue
		}
		v, _ := processLabel(p, nodes[p.Host])(label)
		g := group{value: v}
		if isPerID(label) && v != "" {
			g.host = p.Host
		}
		if byValue[g] == nil {
			byValue[g] = map[string][]uint32{}
		}
		if !slices.Contains(byValue[g][p.Host], p.PID) {
			byValue[g][p.Host] = append(byValue[g][p.Host], p.PID)
		}
	}
	rest := make([]uint64, len(all.Columns))
	for i, c := range all.Columns {
		rest[i] = c.Total
	}
	var rows []report.GroupRow
	for g, pairs := range byValue {
		f := q
		f.Filter.HostPIDs = pairs
		f.Filter.Hosts = slices.Sorted(maps.Keys(pairs))
		t, err := report.Prof(ctx, src, f)
		if err != nil {
			return nil, err
		}
		row := report.GroupRow{Value: g.value, Hosts: f.Filter.Hosts, Counts: make([]uint64, len(all.Columns))}
		for i, c := range all.Columns {
			for _, tc := range t.Columns {
				if tc.Event == c.Event {
					row.Counts[i] = tc.Total
					rest[i] -= min(rest[i], tc.Total)
				}
			}
		}
		rows = append(rows, row)
	}
	if slices.ContainsFunc(rest, func(n uint64) bool { return n > 0 }) {
		i := slices.IndexFunc(rows, func(r report.GroupRow) bool { return r.Value == "" })
		if i < 0 {
			rows = append(rows, report.GroupRow{Value: "", Counts: make([]uint64, len(rest))})
			i = len(rows) - 1
		}
		for j, n := range rest {
			rows[i].Counts[j] += n
		}
		rows[i].Hosts = nil // the samples of no process: of any selected host
	}
	return report.NewGroupTable(label, all.Columns, rows), nil
}

// commas writes n with a comma every three digits: 1,234.
func commas(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// ErrNoProcessDimension: a process selector given to a tool whose data
// has no process dimension (path profiles).
var ErrNoProcessDimension = errors.New("no process dimension")

// SelectPathHosts is SelectHosts for dcpi pp fleet: path profiles are
// merged per host, with no PID, so a process selector is refused.
func SelectPathHosts(ctx context.Context, db DB, sel *Selection) error {
	if err := SelectHosts(ctx, db, sel); err != nil {
		return err
	}
	if len(sel.Procs) > 0 {
		return fmt.Errorf("%s: path profiles have %w (select hosts by their labels)", sel.Procs, ErrNoProcessDimension)
	}
	return nil
}
