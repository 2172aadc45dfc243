package profiledb

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"dcpi/analysis"
	"dcpi/profiledb/selector"
	"dcpi/profiledb/timerange"
	"dcpi/storage"
	"dcpi/wire"

	"github.com/spf13/pflag"
)

// Selection is what the tools' shared filters select.
type Selection struct {
	Filter     storage.Query
	Events     []uint8  // --event, in order; nil: every event present
	ImagePaths []string // --image given as paths or file names
	// Time is the wall-clock range of --since, --from and --to (zero
	// without them); SelectTime turns it into Filter.Epochs once the
	// database's epochs are known.
	Time timerange.Range
	// Labels is --select and --label: SelectHosts turns it into
	// Filter.Hosts once the database's node registry is known.
	Labels selector.Selector
	// Procs are the matchers of Labels on the process dimension (binary,
	// pid, process labels: processes.go), which SelectHosts sets aside
	// and SelectProcesses turns into Filter.HostPIDs.
	Procs selector.Selector
}

// Filters are the tools' shared filters as given (the flags --epoch,
// --epochs, --since, --from, --to, --host, --select, --label, --image,
// --pid and --event; the web's parameters of the same names).
type Filters struct {
	Epochs []string
	Ranges []string // A-B, inclusive
	Time   timerange.Flags
	Hosts  []string
	Images []string // paths, file names or content keys
	PIDs   []uint
	Events []string
	// Select are label selectors (package selector's syntax) and Labels
	// the label=value pairs of --label: all must match.
	Select []string
	Labels map[string]string
}

// Register adds the filters' flags to f, with their help; eventUsage
// describes --event for the tool.
func (qf *Filters) Register(f *pflag.FlagSet, eventUsage string) {
	f.StringSliceVar(&qf.Epochs, "epoch", nil, "only epoch `N` (repeatable)")
	f.StringArrayVar(&qf.Ranges, "epochs", nil, "only epochs `A-B`, inclusive (repeatable)")
	qf.Time.Register(f)
	f.StringArrayVar(&qf.Hosts, "host", nil, "only host `H` (repeatable)")
	f.StringArrayVar(&qf.Images, "image", nil, "only the image at `PATH`, with that file name, or with that content key (repeatable)")
	f.UintSliceVar(&qf.PIDs, "pid", nil, "only process `P`, for images kept per process (repeatable)")
	f.StringArrayVar(&qf.Events, "event", nil, eventUsage)
	f.StringArrayVar(&qf.Select, "select", nil, "only hosts whose labels match `SELECTOR`: service=db,version=~\"1\\..*\" (=, !=, =~, !~; repeatable; all must match)")
	f.StringToStringVar(&qf.Labels, "label", nil, "only hosts registered with label `key=value` (repeatable; all must match)")
}

// MaxEpochRange bounds --epochs A-B: the range becomes a list in the
// query, one entry per epoch.
const MaxEpochRange = 1 << 20

// Selection turns the filters into a selection, with a clear error for
// each bad one. Labels are applied later, by SelectHosts: they need the
// database's node registry.
func (qf Filters) Selection() (Selection, error) {
	var s Selection
	var err error
	for _, name := range qf.Events {
		e, err := analysis.ParseEvent(strings.TrimSpace(name))
		if err != nil {
			return s, fmt.Errorf("--event: %w", errors.Unwrap(err))
		}
		if slices.Contains(s.Events, e) {
			return s, fmt.Errorf("--event %s: given twice", name)
		}
		s.Events = append(s.Events, e)
	}
	for _, v := range qf.Epochs {
		e, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return s, fmt.Errorf("--epoch %q: want an epoch number", v)
		}
		s.Filter.Epochs = append(s.Filter.Epochs, e)
	}
	for _, r := range qf.Ranges {
		var lo, hi uint64
		lo, hi, err = ParseEpochRange(r)
		if err != nil {
			return s, err
		}
		if s.Filter.Epochs, err = appendEpochRange(s.Filter.Epochs, lo, hi); err != nil {
			return s, fmt.Errorf("--epochs %q: %w", r, err)
		}
	}
	if s.Time, err = qf.Time.Parse(time.Now(), time.Local); err != nil {
		return s, err
	}
	if qf.Time.Given() && (len(qf.Epochs) > 0 || len(qf.Ranges) > 0) {
		// A range names epochs too; two ways of naming them at once
		// would need a rule for which wins.
		return s, fmt.Errorf("%s: give either a time range or --epoch/--epochs, not both", timeFlag(qf.Time))
	}
	for _, v := range qf.Select {
		ls, err := selector.Parse(v)
		if err != nil {
			return s, fmt.Errorf("--select %s: %w", v, err)
		}
		s.Labels = append(s.Labels, ls...)
	}
	ls, err := selector.FromLabels(qf.Labels)
	if err != nil {
		return s, fmt.Errorf("--label: %w", err)
	}
	s.Labels = append(s.Labels, ls...)
	for _, h := range qf.Hosts {
		if h == "" {
			return s, fmt.Errorf("--host: empty host name")
		}
		s.Filter.Hosts = append(s.Filter.Hosts, h)
	}
	for _, p := range qf.PIDs {
		if p > 1<<32-1 {
			return s, fmt.Errorf("--pid %d: out of range", p)
		}
		s.Filter.PIDs = append(s.Filter.PIDs, uint32(p))
	}
	for _, im := range qf.Images {
		switch {
		case im == "":
			return s, fmt.Errorf("--image: empty")
		case strings.HasPrefix(im, "buildid:") || strings.HasPrefix(im, "sha256:"):
			k, err := wire.ParseImageKey(im)
			if err != nil {
				return s, fmt.Errorf("--image: %w", err)
			}
			s.Filter.Images = append(s.Filter.Images, k)
		default:
			s.ImagePaths = append(s.ImagePaths, im)
		}
	}
	if len(s.Filter.Images) > 0 && len(s.ImagePaths) > 0 {
		// Filter.Images and ImagePaths intersect; the flags mean union.
		return s, fmt.Errorf("--image: give either content keys or paths, not both")
	}
	return s, nil
}

// appendEpochRange appends lo..hi to epochs, refusing a list of more than
// MaxEpochRange epochs in all: each range is bounded, but a selection may
// give any number of them (the web's epochs=0-1048575,0-1048575,...), and
// every epoch is an entry of the query.
func appendEpochRange(epochs []uint64, lo, hi uint64) ([]uint64, error) {
	if hi-lo >= MaxEpochRange-uint64(min(len(epochs), MaxEpochRange)) {
		return epochs, fmt.Errorf("more than %d epochs in all", MaxEpochRange)
	}
	for e := lo; ; e++ {
		epochs = append(epochs, e)
		if e == hi {
			return epochs, nil
		}
	}
}

// ParseEpochRange parses "A-B" (inclusive) or a single "N".
func ParseEpochRange(s string) (lo, hi uint64, err error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		b = a
	}
	lo, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 64)
	hi, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 64)
	switch {
	case err1 != nil || err2 != nil:
		return 0, 0, fmt.Errorf("--epochs %q: want A-B with A and B epoch numbers", s)
	case hi < lo:
		return 0, 0, fmt.Errorf("--epochs %q: range ends before it starts", s)
	case hi-lo >= MaxEpochRange:
		return 0, 0, fmt.Errorf("--epochs %q: more than %d epochs", s, MaxEpochRange)
	}
	return lo, hi, nil
}

// timeFlag names the first time flag given, for messages.
func timeFlag(f timerange.Flags) string {
	switch {
	case f.Since != "":
		return "--since"
	case f.From != "":
		return "--from"
	}
	return "--to"
}
