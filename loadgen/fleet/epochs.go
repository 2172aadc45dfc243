package fleet

import (
	"context"
	"dcpi/cluster"
	"dcpi/config"
	"dcpi/coordinator"
	"dcpi/storage"
	"dcpi/transport/auth"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// epochCutter cuts an epoch every interval of the load, as an operator's
// dcpi epoch cut would, and watches each cut epoch until it is sealed:
// the time from cut to sealed is what the fleet's acknowledgements and
// the last batches' commits cost under the load.
type epochCutter struct {
	nc   *nats.Conn
	done chan struct{} // closed when the load's cuts are all made and sealed, or ctx ended

	mu       sync.Mutex
	cutAt    map[uint64]time.Time // closing epoch → when its cut committed
	sealedIn map[uint64]float64   // closing epoch → seconds from cut to seen sealed
	failures int
}

// startEpochCutter cuts at start+every, start+2·every, ... while within
// length, polling the epochs each second until each cut one is sealed or
// ctx ends.
func startEpochCutter(ctx context.Context, ncfg config.NATS, warn io.Writer, start time.Time, every, length time.Duration) (*epochCutter, error) {
	nc, err := cluster.ConnectTool(ctx, ncfg, auth.Coordinator, "loadgen-epochs", warn)
	if err != nil {
		return nil, err
	}
	c := &epochCutter{nc: nc, done: make(chan struct{}), cutAt: map[uint64]time.Time{}, sealedIn: map[uint64]float64{}}
	go c.run(ctx, coordinator.NewClient(nc), start, every, length)
	return c, nil
}

func (c *epochCutter) run(ctx context.Context, coord *coordinator.Client, start time.Time, every, length time.Duration) {
	defer close(c.done)
	defer c.nc.Close()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	next := start.Add(every)
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			loading := now.Before(start.Add(length))
			if loading && !now.Before(next) {
				next = next.Add(every)
				c.cut(ctx, coord)
			}
			if c.watch(ctx, coord) && !loading {
				return
			}
		}
	}
}

// cut cuts one epoch. A cut whose outcome is unknown (the leader changed
// under it) is counted failed; the watch still sees it if it committed.
func (c *epochCutter) cut(ctx context.Context, coord *coordinator.Client) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	open, err := coord.CutEpoch(cctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.failures++
		return
	}
	c.cutAt[open-1] = time.Now()
}

// watch notes the cut epochs newly sealed and reports whether all are.
func (c *epochCutter) watch(ctx context.Context, coord *coordinator.Client) bool {
	c.mu.Lock()
	all := len(c.sealedIn) == len(c.cutAt)
	c.mu.Unlock()
	if all {
		return true
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	eps, err := coord.Epochs(wctx)
	cancel()
	if err != nil {
		return false
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range eps {
		at, cut := c.cutAt[e.Number]
		if _, seen := c.sealedIn[e.Number]; cut && !seen && e.State == storage.EpochSealed {
			c.sealedIn[e.Number] = now.Sub(at).Seconds()
		}
	}
	return len(c.sealedIn) == len(c.cutAt)
}

// wait waits up to limit for the cutter to finish.
func (c *epochCutter) wait(limit time.Duration) {
	select {
	case <-c.done:
	case <-time.After(limit):
	}
}

// result is the cuts made and failed, the epochs sealed, and the median
// and longest time from cut to sealed.
func (c *epochCutter) result() (cuts, failures, sealed int, p50, longest float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ts []float64
	for _, t := range c.sealedIn {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	if len(ts) > 0 {
		p50, longest = ts[len(ts)/2], ts[len(ts)-1]
	}
	return len(c.cutAt), c.failures, len(ts), p50, longest
}
