package week

import (
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"dcpi/analysis/symbolize"
	"dcpi/coordinator"
	"dcpi/profiledb"
	"dcpi/profiledb/timerange"
)

// query times dcpiprof's top 20 over the epochs overlapping the last
// since (a duration) at now, as `dcpi prof --since D --limit 20 --nats`
// runs it: the cluster's query path (the leader, linearizable), the time
// range placed on the epochs, a symbol cache of its own, the table
// written. The median of the configured runs.
func (r *run) query(ctx context.Context, since string, now time.Time) (Query, error) {
	rng, err := timerange.Flags{Since: since}.Parse(now, time.UTC)
	if err != nil {
		return Query{}, err
	}
	var q Query
	times := make([]float64, 0, r.cfg.QueryRepeat)
	for range r.cfg.QueryRepeat {
		t0 := time.Now()
		db := profiledb.NewCluster(r.cl.Conn(), true)
		sel := profiledb.Selection{Time: rng}
		if err := profiledb.SelectTime(ctx, db, &sel, io.Discard); err != nil {
			return q, err
		}
		rep, err := profiledb.Prof(ctx, db, symbolize.New(db), sel, profiledb.ProfOptions{By: "procedure", Limit: 20})
		if err != nil {
			return q, err
		}
		if err := rep.WriteText(io.Discard); err != nil {
			return q, err
		}
		times = append(times, float64(time.Since(t0).Microseconds())/1000)
		q.Epochs = len(sel.Filter.Epochs)
		q.Samples = 0
		for _, c := range rep.Table.Columns {
			q.Samples += c.Total
		}
	}
	slices.Sort(times)
	q.Millis = times[len(times)/2]
	return q, nil
}

// counters are rep's counter samples by name and labels, as
// `name{label="value"}`.
func counters(rep *coordinator.Replica) (map[string]float64, error) {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(rep.Collector()); err != nil {
		return nil, err
	}
	mfs, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.GetCounter() == nil {
				continue
			}
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+`="`+l.GetValue()+`"`)
			}
			key := mf.GetName()
			if len(ls) > 0 {
				key += "{" + strings.Join(ls, ",") + "}"
			}
			out[key] += m.GetCounter().GetValue()
		}
	}
	return out, nil
}
