package week

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"dcpi/internal/svgchart"
)

// WriteJSON writes the run, series included.
func (r *Result) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// hours is the x axis: simulated hours, in five steps of a multiple of
// 12 (a week: 0, 36, 72, ..., 180, so that 72 and 144 fall on midnights).
func (r *Result) hours() svgchart.Axis {
	step := 12 * math.Ceil(float64(max(r.Hours, 1))/5/12)
	return svgchart.Axis{Min: 0, Max: 5 * step}
}

// WriteSizeSVG plots the leader's database size over simulated time: its
// live sstables after each hour and, where measured, settled (compacted
// whole); and beside them every file of Pebble's, the write-ahead log's
// share apart.
func (r *Result) WriteSizeSVG(w io.Writer) error {
	var tables, settled, disk, wal []svgchart.XY
	var mostTables, mostDisk float64
	for _, h := range r.Series {
		x := float64(h.Hour)
		tables = append(tables, svgchart.XY{X: x, Y: float64(h.TableBytes) / 1e6})
		mostTables = max(mostTables, float64(h.TableBytes)/1e6)
		if h.Settled != 0 {
			settled = append(settled, svgchart.XY{X: x, Y: float64(h.Settled) / 1e6})
		}
		disk = append(disk, svgchart.XY{X: x, Y: float64(h.DiskBytes) / 1e6})
		wal = append(wal, svgchart.XY{X: x, Y: float64(h.WALBytes) / 1e6})
		mostDisk = max(mostDisk, float64(h.DiskBytes)/1e6)
	}
	c := svgchart.New()
	ya := svgchart.Axis{Min: 0, Max: svgchart.NiceCeil(mostTables)}
	p := c.Panel(0, "the profile data: live sstables", "simulated hours", "MB", r.hours(), ya)
	p.Line(tables, "#36c")
	for _, s := range settled {
		p.Dot(s, "#c33")
	}
	p.Label(svgchart.XY{X: 0, Y: 0.94 * ya.Max}, "after each hour", "#36c")
	p.Label(svgchart.XY{X: 0, Y: 0.87 * ya.Max}, "settled (compacted whole)", "#c33")
	da := svgchart.Axis{Min: 0, Max: svgchart.NiceCeil(mostDisk)}
	d := c.Panel(1, "all of Pebble's files", "simulated hours", "MB", r.hours(), da)
	d.Line(disk, "#555")
	d.Line(wal, "#c90")
	d.Label(svgchart.XY{X: 0, Y: 0.94 * da.Max}, "sstables, WAL and stale tables", "#555")
	d.Label(svgchart.XY{X: 0, Y: 0.87 * da.Max}, "write-ahead log", "#c90")
	return c.Write(w, fmt.Sprintf("dcpi: %d hosts for %d simulated hours, hourly epochs, retention %s", r.Hosts, r.Hours, r.Retention),
		fmt.Sprintf("the leader of %d replicas; %d samples per host-hour; conservation %s", r.Replicas, r.SamplesHostHour, balancedWord(r.Balanced)))
}

// WriteQuerySVG plots the time of the "last hour" and "last week"
// dcpiprof queries after each simulated hour, and the epochs each
// covered.
func (r *Result) WriteQuerySVG(w io.Writer) error {
	var hour, week, hourEps, weekEps []svgchart.XY
	var most, mostEps float64
	for _, h := range r.Series {
		x := float64(h.Hour)
		hour = append(hour, svgchart.XY{X: x, Y: h.LastHour.Millis})
		week = append(week, svgchart.XY{X: x, Y: h.LastWeek.Millis})
		hourEps = append(hourEps, svgchart.XY{X: x, Y: float64(h.LastHour.Epochs)})
		weekEps = append(weekEps, svgchart.XY{X: x, Y: float64(h.LastWeek.Epochs)})
		most = max(most, h.LastHour.Millis, h.LastWeek.Millis)
		mostEps = max(mostEps, float64(h.LastWeek.Epochs))
	}
	c := svgchart.New()
	ya := svgchart.Axis{Min: 0, Max: svgchart.NiceCeil(most)}
	p := c.Panel(0, "dcpi prof --limit 20 (median of runs)", "simulated hours", "ms", r.hours(), ya)
	p.Line(hour, "#36c")
	p.Line(week, "#c33")
	p.Label(svgchart.XY{X: 0, Y: 0.94 * ya.Max}, "--since 1h", "#36c")
	p.Label(svgchart.XY{X: 0, Y: 0.87 * ya.Max}, "--since 168h", "#c33")
	ea := svgchart.Axis{Min: 0, Max: svgchart.NiceCeil(mostEps)}
	e := c.Panel(1, "epochs the range covered", "simulated hours", "epochs", r.hours(), ea)
	e.Line(hourEps, "#36c")
	e.Line(weekEps, "#c33")
	return c.Write(w, fmt.Sprintf("dcpi: query time as history grows (%d hosts, retention %s)", r.Hosts, r.Retention),
		"through the cluster's query path (leader, linearizable), a fresh symbol cache per query")
}

func balancedWord(ok bool) string {
	if ok {
		return "exact"
	}
	return "NOT balanced"
}
