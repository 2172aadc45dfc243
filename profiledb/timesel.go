package profiledb

import (
	"context"
	"fmt"
	"io"
	"time"

	"dcpi/profiledb/timerange"
)

// SelectTime narrows sel to the epochs that overlap its wall-clock range
// (sel.Time) and writes to w the one line that says which epochs and what
// span they cover; without a range it does nothing. Every tool calls it
// once the database is open, since the mapping needs the epochs' times.
// No epoch overlapping the range is an error wrapping
// timerange.ErrNoEpoch that names the span the epochs do cover.
func SelectTime(ctx context.Context, db DB, sel *Selection, w io.Writer) error {
	if sel.Time.IsZero() {
		return nil
	}
	c, err := CoverTime(ctx, db, sel.Time)
	if err != nil {
		return err
	}
	sel.Filter.Epochs = c.Epochs
	_, err = fmt.Fprintln(w, c)
	return err
}

// CoverTime resolves r against db's epochs (timerange.Resolve).
func CoverTime(ctx context.Context, db DB, r timerange.Range) (timerange.Cover, error) {
	infos, err := db.Epochs(ctx)
	if err != nil {
		return timerange.Cover{}, fmt.Errorf("reading the epochs to place the time range: %w", err)
	}
	eps := make([]timerange.Epoch, len(infos))
	for i, e := range infos {
		eps[i] = timerange.Epoch{Number: e.Number, Start: e.Start, End: e.End}
	}
	return timerange.Resolve(r, eps)
}

// setTime is a set SPEC's since=, from= and to= keys resolved against
// db's epochs now: the epochs, and the spec's name with what they cover.
func setTime(ctx context.Context, db DB, spec string, f timerange.Flags) ([]uint64, string, error) {
	r, err := f.ParseAs(time.Now(), time.Local, "")
	if err != nil {
		return nil, "", fmt.Errorf("set %q: %w", spec, err)
	}
	c, err := CoverTime(ctx, db, r)
	if err != nil {
		return nil, "", fmt.Errorf("set %q: %w", spec, err)
	}
	return c.Epochs, fmt.Sprintf("%s [%s]", spec, c.Short()), nil
}
