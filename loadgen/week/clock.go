package week

import (
	"sync/atomic"
	"time"
)

// Clock is the simulated wall clock the replicas read
// (coordinator.Config.Now): it stands still until the driver sets it.
type Clock struct{ ns atomic.Int64 }

// NewClock is a clock at t.
func NewClock(t time.Time) *Clock {
	c := &Clock{}
	c.Set(t)
	return c
}

// Now is the clock's time.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }
