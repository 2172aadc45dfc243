package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"dcpi/coordinator"
	"dcpi/internal/datadir"
)

// FleetFile is the file in a cluster's directory that records what a later run
// needs to continue the fleet: the Raft group's members and their
// addresses. The Raft log holds the membership with those addresses, so a
// run that picked new ports would start replicas that can never reach
// each other (the second run used to wait forever for a leader).
const FleetFile = "demo.json"

// fleetRecord is FleetFile's content.
type fleetRecord struct {
	Replicas []coordinator.Peer `json:"replicas"`
}

// fleetDir is a cluster's data directory, prepared for a run.
type fleetDir struct {
	peers     []coordinator.Peer
	continued bool // an earlier run's fleet is continued
	release   func()
}

// prepareFleetDir locks dir for this demo and returns the replicas to run:
// an earlier run's (same IDs and addresses), or new ones on free ports,
// recorded for the next run. replicasSet says --replicas was given; a
// count different from the recorded fleet's is then an error saying what
// to do. Every error is one line naming the way on.
func prepareFleetDir(dir string, replicas int, replicasSet bool) (*fleetDir, error) {
	release, err := datadir.Lock(dir, "--dir", "dcpi demo")
	if err != nil {
		return nil, err
	}
	d, err := readFleetDir(dir, replicas, replicasSet)
	if err != nil {
		release()
		return nil, err
	}
	d.release = release
	return d, nil
}

func readFleetDir(dir string, replicas int, replicasSet bool) (*fleetDir, error) {
	path := filepath.Join(dir, FleetFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return newFleetDir(dir, replicas)
	case err != nil:
		return nil, fmt.Errorf("--dir %s: %w", dir, err)
	}
	var f fleetRecord
	if err := json.Unmarshal(b, &f); err != nil || len(f.Replicas) == 0 {
		return nil, fmt.Errorf("--dir %s: %s is not a dcpi demo's fleet record; give a new --dir", dir, path)
	}
	if n := len(f.Replicas); n != replicas {
		if replicasSet {
			return nil, fmt.Errorf("--dir %s holds a fleet of %d coordinator replicas; continue it with --replicas %d, or give a new --dir for %d", dir, n, n, replicas)
		}
	}
	for _, p := range f.Replicas {
		if !portFree(p.Addr) {
			return nil, fmt.Errorf("--dir %s: replica %s's Raft address %s (recorded in %s) is taken by another process; stop it, or give a new --dir", dir, p.ID, p.Addr, FleetFile)
		}
	}
	return &fleetDir{peers: f.Replicas, continued: true}, nil
}

// newDemoDir makes a new fleet in dir, which must be empty (but for the
// lock): a directory of something else is not written into.
func newFleetDir(dir string, replicas int) (*fleetDir, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--dir %s: %w", dir, err)
	}
	for _, e := range ents {
		if e.Name() == datadir.LockName {
			continue
		}
		if _, err := coordinator.ProfileDBDir(filepath.Join(dir, "c1")); err == nil {
			return nil, fmt.Errorf("--dir %s holds a fleet of an older dcpi demo, which did not record its Raft addresses (%s); give a new --dir (its profiles stay readable: dcpi prof --db %s)", dir, FleetFile, filepath.Join(dir, "c1"))
		}
		return nil, fmt.Errorf("--dir %s: not empty and not a dcpi demo's directory (no %s); give a new or empty directory", dir, FleetFile)
	}
	peers := make([]coordinator.Peer, replicas)
	for i := range peers {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		peers[i] = coordinator.Peer{ID: fmt.Sprintf("c%d", i+1), Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	}
	b, _ := json.MarshalIndent(fleetRecord{Replicas: peers}, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, FleetFile), append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("--dir %s: %w", dir, err)
	}
	return &fleetDir{peers: peers}, nil
}

// portFree says whether addr can be listened on now.
func portFree(addr string) bool {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	l.Close()
	return true
}
