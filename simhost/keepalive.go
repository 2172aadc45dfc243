package simhost

import (
	"fmt"

	"dcpi/hwsim"
)

// program is a top-level process the host keeps running.
type program struct {
	path string
	argv []string
	pid  int
}

// keepAlive restarts top-level programs when they exit, so a host stays
// loaded for as long as it is profiled, as the paper's machines were. It
// is an hwsim.EventSink; events and restarts both happen on the
// simulation goroutine.
type keepAlive struct {
	progs   []*program
	exited  []*program
	byPID   map[int]*program
	Restart uint64 // programs restarted
}

func (k *keepAlive) ProcessEvent(e hwsim.Event) {
	if e.Kind != hwsim.EventExit {
		return
	}
	if p := k.byPID[e.PID]; p != nil {
		delete(k.byPID, e.PID)
		k.exited = append(k.exited, p)
	}
}

func (k *keepAlive) start(m *hwsim.Machine, p *program) error {
	proc, err := m.Spawn(p.path, p.argv, nil)
	if err != nil {
		return fmt.Errorf("simhost: start %s: %w", p.path, err)
	}
	p.pid = proc.PID
	k.byPID[p.pid] = p
	return nil
}

// restart starts again every program that has exited.
func (k *keepAlive) restart(m *hwsim.Machine) error {
	for _, p := range k.exited {
		if err := k.start(m, p); err != nil {
			return err
		}
		k.Restart++
	}
	k.exited = k.exited[:0]
	return nil
}

// KeepRunning starts path with argv and starts it again each time it
// exits, for as long as Run runs (which then ends only at its limit).
// Call it before Run.
func (h *Host) KeepRunning(path string, argv []string) error {
	if h.keep == nil {
		h.keep = &keepAlive{byPID: map[int]*program{}}
		h.m.Subscribe(h.keep)
	}
	p := &program{path: path, argv: argv}
	h.keep.progs = append(h.keep.progs, p)
	return h.keep.start(h.m, p)
}

// Restarts is how many times kept programs were started again.
func (h *Host) Restarts() uint64 {
	if h.keep == nil {
		return 0
	}
	return h.keep.Restart
}
