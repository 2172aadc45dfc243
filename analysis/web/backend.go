// Package web owns dcpi's web UI (dcpi web, and the same pages served by
// dcpi demo and dcpi coordinator --http): server-rendered HTML over the
// analysis tools' own logic — the hot procedures of dcpiprof (report.Prof),
// the annotated listing of dcpilist (report.List) with dcpicalc's CPI and
// culprits (calc.Run), flame graphs and icicles from the sampled call
// stacks (report.Tree), dcpidiff (report.Diff) and its differential flame
// graph, dcpi trend's chart over the epochs (trend.Run), the newest sealed
// epoch's regressions (regress.Evaluate), the fleet's epochs and hosts,
// and the pprof export of the current selection.
//
// The handlers are pure functions of a request and a Backend: the boundary
// to the data, which the dcpi commands implement over the same opened
// source and the same filter parsing as the command-line tools, so a page
// and the tool given the same filters read the same samples the same way.
// Templates, CSS and the little JavaScript the pages use are embedded; no
// page loads anything from elsewhere.
package web

import (
	"context"
	"io"
	"time"

	"github.com/google/pprof/profile"

	"dcpi/analysis"
	"dcpi/analysis/report"
	"dcpi/analysis/symbolize"
	"dcpi/storage"
)

// Filters are a page's filter parameters as given, before they are
// checked: the command-line tools' shared flags, one URL parameter each
// (host, select, label, epoch, epochs, since, from, to, image, event,
// pid), repeatable but for the time range's three.
type Filters struct {
	Hosts []string
	// Select are label selectors (select=service="db",zone!="eu"; dcpi
	// prof --select), checked by the backend.
	Select      []string
	Labels      map[string]string // label=KEY=VALUE
	Epochs      []string
	EpochRanges []string
	// Since, From and To are the wall-clock range (dcpi prof --since,
	// --from, --to).
	Since, From, To string
	Images          []string
	Events          []string
	PIDs            []string
}

// Selection is what checked Filters select, as the tools' queries take it.
type Selection struct {
	Filter     storage.Query
	Events     []uint8
	ImagePaths []string
	// Covered says which epochs and what span a time range selected
	// ("" without one); the pages show it under the filters.
	Covered string
}

// ToolReport names a tool's report for Backend.Report.
type ToolReport struct {
	Tool      string // "me", "values" or "paths"
	Procedure string // me: one procedure's instructions ("": the summary)
	View      string // values: latency, frequent or semiinv
	Image     string // paths: images with this path, base name or key ("": all)
}

// Epoch is one row of the epochs page (and of the API's epochs).
type Epoch struct {
	Number uint64 `json:"number"`
	// MergedThrough: retention merged epochs Number..MergedThrough into
	// this one (0: not a merge).
	MergedThrough uint64    `json:"merged_through,omitempty"`
	State         string    `json:"state"`
	Start         time.Time `json:"start"`
	End           time.Time `json:"end"`     // zero while open
	Acked         []string  `json:"acked"`   // hosts that acknowledged the cut ("(late)" marked)
	Waiting       []string  `json:"waiting"` // hosts the coordinator still waits for
}

// Host is one row of the hosts page (and of the API's hosts).
type Host struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
	CPUs   int               `json:"cpus"`
	// Registered and Updated are the node registry's first and latest
	// registration.
	Registered time.Time `json:"registered"`
	Updated    time.Time `json:"updated"`
	// Liveness is "live", "down", or "" when the source cannot say (a
	// local database, or a follower replica).
	Liveness      string    `json:"liveness,omitempty"`
	LastHeartbeat time.Time `json:"last_heartbeat"` // zero if unknown
	Samples       uint64    `json:"samples"`        // stored samples of every event, every epoch
}

// Backend is the data behind the pages.
type Backend interface {
	// Source is the profile the tools read (a StackSource when it holds
	// call stacks).
	Source() analysis.Source
	// Select checks f as the command-line tools check their flags,
	// with the same message for each bad value, applies labels and maps
	// a time range to its epochs (an error when it overlaps none).
	Select(ctx context.Context, f Filters) (Selection, error)
	// Set parses a sample set SPEC of dcpi stats --set over base (dcpi
	// diff's --a and --b).
	Set(ctx context.Context, base Selection, spec string) (analysis.SampleSet, error)
	// Hint says why a selection that matched nothing did (a host or
	// epoch the source does not hold, and what it does hold), or "".
	Hint(ctx context.Context, sel Selection) string
	// Files finds image bytes for listings; SourceFile source text ("",
	// an error, when not found).
	Files() symbolize.ImageFinder
	SourceFile(name string) ([]byte, error)
	// CalcPeriods are the sampling periods dcpi calc uses for the hosts
	// (every host with nil).
	CalcPeriods(ctx context.Context, hosts []string) (map[string]map[uint8]float64, error)
	// Groups is dcpi prof --by LABEL over sel: its samples per value of
	// the host label (host itself included), the top limit values (0:
	// all) and the rest summed.
	Groups(ctx context.Context, sel Selection, label string, limit int) (*report.GroupTable, error)
	// Report writes to w, as the tool prints it, the report of one of
	// the tools whose data is more than the samples: dcpi me (ProfileMe),
	// dcpi values (value sampling) or dcpi pp fleet (path profiles), over
	// sel. Its error is the tool's, which says what the source lacks.
	Report(ctx context.Context, r ToolReport, sel Selection, w io.Writer) error
	// Pprof is dcpi pprof's export of sel.
	Pprof(ctx context.Context, sel Selection) (*profile.Profile, error)
	Epochs(ctx context.Context) ([]Epoch, error)
	Hosts(ctx context.Context) ([]Host, error)
	// Where names the source on the pages ("the cluster", a directory).
	Where() string
	// Live: the source is still collecting (a cluster), so the pages
	// offer to refresh themselves when its samples change.
	Live() bool
}
