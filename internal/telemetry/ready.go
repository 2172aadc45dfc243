package telemetry

import (
	"fmt"
	"slices"
	"sync"
)

// Readiness is the set of conditions a process must meet to be ready:
// each role adds its own (connected to NATS, Raft has a leader and the
// database has caught up, the database is open). It is safe for
// concurrent use; a check runs on every /readyz request, so it must be
// cheap and must not block.
type Readiness struct {
	mu     sync.Mutex
	checks []check
}

type check struct {
	name string
	fn   func() error
}

// Add adds a condition: fn returns nil when it holds, or says why not.
// Checks of one name replace each other (a role restarted in-process).
func (r *Readiness) Add(name string, fn func() error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checks = slices.DeleteFunc(r.checks, func(c check) bool { return c.name == name })
	r.checks = append(r.checks, check{name: name, fn: fn})
}

// Remove drops the condition of that name (a role that has stopped).
func (r *Readiness) Remove(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checks = slices.DeleteFunc(r.checks, func(c check) bool { return c.name == name })
}

// Check runs every condition and returns one line per unmet one, "name:
// why", in the order they were added. A process with no conditions is not
// ready: nothing has said it is.
func (r *Readiness) Check() []string {
	r.mu.Lock()
	checks := slices.Clone(r.checks)
	r.mu.Unlock()
	if len(checks) == 0 {
		return []string{"starting: no role has registered a readiness check yet"}
	}
	var out []string
	for _, c := range checks {
		if err := c.fn(); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", c.name, err))
		}
	}
	return out
}
