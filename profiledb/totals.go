package profiledb

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"

	"dcpi/conservation"
	"dcpi/storage"
)

// Totals is what dcpi totals prints, for conservation checks: the
// samples a database holds with an image and as unknown, and every drop
// counter. Total sums them all, every sample the fleet's hardware
// generated that has reached the database. Its JSON form is the
// command's machine interface.
type Totals struct {
	Samples uint64            `json:"samples"` // stored with an image
	Unknown uint64            `json:"unknown"` // stored without one
	Drops   map[string]uint64 `json:"drops"`   // every drop counter, by name
	Total   uint64            `json:"total"`   // samples + unknown + every drop
	// Hint says why nothing matched (EmptyHint): a --host or --epoch
	// the database does not hold; "" when something did.
	Hint string `json:"-"`
}

// ReadTotals reads db's totals of what q selects, with the hint when
// nothing matched.
func ReadTotals(ctx context.Context, db DB, q storage.Query) (*Totals, error) {
	r, err := db.StoredTotals(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("totals: %w", err)
	}
	t := &Totals{Samples: r.Samples, Unknown: r.Unknown, Drops: r.Drops, Total: r.Samples + r.Unknown}
	if t.Drops == nil {
		t.Drops = map[string]uint64{}
	}
	for _, n := range t.Drops {
		t.Total += n
	}
	if t.Total == 0 {
		t.Hint = EmptyHint(ctx, db, q)
	}
	return t, nil
}

// WriteText prints one line, "N samples stored, N unknown, N dropped
// (each counter by name); N in all", and the hint when there is one.
func (t *Totals) WriteText(w io.Writer) error {
	var names []string
	for name, n := range t.Drops {
		names = append(names, name+" "+strconv.FormatUint(n, 10))
	}
	slices.Sort(names)
	if _, err := fmt.Fprintf(w, "%d samples stored, %d unknown, %d dropped (%s); %d in all\n",
		t.Samples, t.Unknown, t.Total-t.Samples-t.Unknown, conservation.DropList(names), t.Total); err != nil {
		return err
	}
	if t.Hint != "" {
		_, err := fmt.Fprintln(w, t.Hint)
		return err
	}
	return nil
}

// WriteJSON writes {"samples", "unknown", "drops": {name: count},
// "total"} on one line; the hint is for people and is left out.
func (t *Totals) WriteJSON(w io.Writer) error { return json.NewEncoder(w).Encode(t) }
