package coordinator

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"dcpi/storage"
)

// LocalEpochs reads a database's epochs and their acknowledgements, as
// the leader's Epochs query gives them but with no liveness ("waiting
// for" is empty): for a stopped replica's data directory or a local
// profile database.
func LocalEpochs(db *storage.DB) ([]EpochInfo, error) {
	es, err := db.Epochs()
	if err != nil {
		return nil, err
	}
	eps := make([]EpochInfo, 0, len(es))
	for _, e := range es {
		acks, err := db.EpochAcks(e.Number)
		if err != nil {
			return nil, err
		}
		eps = append(eps, EpochInfo{Epoch: e, Acks: acks})
	}
	return eps, nil
}

// AckedBy lists the hosts that acknowledged the epoch, sorted, a late
// acknowledgement marked "(late)".
func (e EpochInfo) AckedBy() []string {
	var out []string
	for _, a := range e.Acks {
		s := a.Host
		if a.Late {
			s += " (late)"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// WriteEpochs writes an epoch table (dcpi epoch list): each epoch's
// state, time span, the hosts that acknowledged its cut and those the
// leader still waits for. An epoch retention merged shows the numbers it
// holds ("25-48") and how many it merged; times carry their date when
// the table spans more than one day, as a week of hourly epochs does.
func WriteEpochs(w io.Writer, eps []EpochInfo) error {
	fmt.Fprintf(w, "\nEpochs:\n")
	if len(eps) == 0 {
		_, err := fmt.Fprintln(w, "none recorded")
		return err
	}
	layout := epochTimeLayout(eps)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "epoch\tstate\tstart\tend\tacknowledged by\twaiting for")
	for _, e := range eps {
		end := "-"
		if !e.End.IsZero() {
			end = e.End.Format(layout)
		}
		number, state := fmt.Sprint(e.Number), e.State.String()
		if e.MergedThrough > e.Number {
			number = fmt.Sprintf("%d-%d", e.Number, e.MergedThrough)
			state += fmt.Sprintf(" (%d merged)", e.MergedThrough-e.Number+1)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", number, state, e.Start.Format(layout), end,
			orDash(strings.Join(e.AckedBy(), " ")), orDash(strings.Join(e.Waiting, " ")))
	}
	return tw.Flush()
}

// epochTimeLayout is the clock alone when every epoch starts and ends on
// one day, else the date and the clock.
func epochTimeLayout(eps []EpochInfo) string {
	day := eps[0].Start.Format(time.DateOnly)
	for _, e := range eps {
		if e.Start.Format(time.DateOnly) != day || (!e.End.IsZero() && e.End.Format(time.DateOnly) != day) {
			return "2006-01-02 15:04:05"
		}
	}
	return "15:04:05.000"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// EpochJSON is an epoch as dcpi epoch list --json prints it, in the
// snake_case every tool's JSON uses (EpochInfo itself is a wire message
// between replicas and clients, whose field names stay).
type EpochJSON struct {
	Number        uint64     `json:"number"`
	State         string     `json:"state"`
	Start         time.Time  `json:"start"`
	End           *time.Time `json:"end,omitempty"` // absent while open
	MergedThrough uint64     `json:"merged_through,omitempty"`
	Acks          []AckJSON  `json:"acks"`
	Waiting       []string   `json:"waiting"`
}

// AckJSON is a node's acknowledgement of an epoch's cut in EpochJSON.
type AckJSON struct {
	Host    string    `json:"host"`
	LastSeq []uint64  `json:"last_seq"`
	At      time.Time `json:"at"`
	Late    bool      `json:"late"`
}

// EpochsJSON is eps as dcpi epoch list --json prints them.
func EpochsJSON(eps []EpochInfo) []EpochJSON {
	out := make([]EpochJSON, 0, len(eps))
	for _, e := range eps {
		j := EpochJSON{Number: e.Number, State: e.State.String(), Start: e.Start, MergedThrough: e.MergedThrough,
			Acks: []AckJSON{}, Waiting: e.Waiting}
		if !e.End.IsZero() {
			end := e.End
			j.End = &end
		}
		if j.Waiting == nil {
			j.Waiting = []string{}
		}
		for _, a := range e.Acks {
			j.Acks = append(j.Acks, AckJSON{Host: a.Host, LastSeq: a.LastSeq, At: a.At, Late: a.Late})
		}
		out = append(out, j)
	}
	return out
}

// EpochList is dcpi epoch list's output: the table (WriteEpochs) or its
// JSON (EpochsJSON).
type EpochList []EpochInfo

// WriteText writes the epoch table.
func (l EpochList) WriteText(w io.Writer) error { return WriteEpochs(w, l) }

// WriteJSON writes the epochs in snake_case JSON, indented.
func (l EpochList) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(EpochsJSON(l))
}
