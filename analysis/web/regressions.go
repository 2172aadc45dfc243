package web

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"dcpi/analysis/regress"
	"dcpi/storage"
)

// regressionsView is the regressions page: an evaluation, and the diff
// page's SPECs that show the same comparison in full.
type regressionsView struct {
	Eval *regress.Evaluation
	// Diff is the diff page's query comparing the baseline and the
	// epoch ("" when the baseline is not one range of epochs).
	Diff string
}

// regressions evaluates an epoch as dcpi web --watch does
// (regress.Evaluate over the backend's source and epochs): the newest
// sealed one, or the one epoch the filters select, against the sealed
// epochs before it. baseline, top, z and min are the watch's options.
func (s *Server) regressions(ctx context.Context, req request, pd *pageData) error {
	sel, err := s.selection(ctx, req, pd)
	if err != nil {
		return err
	}
	o := regress.DefaultOptions()
	if o.Baseline, err = intParam(req, "baseline", o.Baseline, 1); err != nil {
		return err
	}
	if o.Top, err = intParam(req, "top", o.Top, 1); err != nil {
		return err
	}
	if o.Z, err = floatParam(req, "z", o.Z, 0.001, 1000); err != nil {
		return err
	}
	minSamples, err := intParam(req, "min", int(o.MinSamples), 0)
	if err != nil {
		return err
	}
	o.MinSamples = uint64(minSamples)
	pd.Keep = map[string]string{}
	for _, name := range viewParams["regressions"] {
		pd.Keep[name], _ = req.one(name)
	}
	q := regress.Query{Filter: sel.Filter, ImagePaths: sel.ImagePaths, Options: o}
	switch len(sel.Filter.Epochs) {
	case 0:
	case 1:
		q.Epoch = sel.Filter.Epochs[0]
	default:
		return badf("regressions evaluate one epoch against the ones before it: give one epoch (or none: the newest sealed)")
	}
	switch len(sel.Events) {
	case 0:
	case 1:
		q.Event = sel.Events[0]
	default:
		return badf("event: regressions compare one event; give one")
	}
	eps, err := s.b.Epochs(ctx)
	if err != nil {
		return err
	}
	epochs := make([]storage.Epoch, len(eps))
	for i, e := range eps {
		epochs[i] = storage.Epoch{Number: e.Number, Start: e.Start, End: e.End, State: storage.EpochOpen}
		if e.State == storage.EpochSealed.String() {
			epochs[i].State = storage.EpochSealed
		}
	}
	ev, err := regress.Evaluate(ctx, s.b.Source(), epochs, q)
	if errors.Is(err, regress.ErrNoSealed) {
		pd.Notice = "No sealed epoch yet: an epoch is compared with the ones before it once it is cut and sealed (dcpi epoch cut, or epoch_every)."
		return nil
	}
	if err != nil {
		return err
	}
	if len(ev.Baseline) == 0 {
		pd.Notice = fmt.Sprintf("Epoch %d is the first sealed epoch: there is nothing before it to compare with.", ev.Epoch)
		return nil
	}
	v := &regressionsView{Eval: ev}
	if n := len(ev.Baseline); ev.Baseline[n-1]-ev.Baseline[0] == uint64(n-1) {
		v.Diff = "?" + url.Values{"a": {fmt.Sprintf("epochs=%d-%d", ev.Baseline[0], ev.Baseline[n-1])},
			"b": {"epoch=" + strconv.FormatUint(ev.Epoch, 10)}}.Encode()
	}
	pd.Title, pd.View = "regressions", v
	if ev.Significant == 0 {
		pd.Notice = fmt.Sprintf("No significant change in share in epoch %d against epochs %s.", ev.Epoch, epochList(ev.Baseline))
	}
	return nil
}

// epochList writes epochs as "2-7" when they are a range, else "2, 4, 5".
func epochList(es []uint64) string {
	if len(es) > 1 && es[len(es)-1]-es[0] == uint64(len(es)-1) {
		return fmt.Sprintf("%d-%d", es[0], es[len(es)-1])
	}
	out := ""
	for i, e := range es {
		if i > 0 {
			out += ", "
		}
		out += strconv.FormatUint(e, 10)
	}
	return out
}
