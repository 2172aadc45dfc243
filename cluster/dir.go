package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

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
	peers, err := parseFleetRecord(b)
	if err != nil {
		return nil, fmt.Errorf("--dir %s: %s is not a dcpi demo's fleet record (%v); give a new --dir", dir, path, err)
	}
	if n := len(peers); n != replicas {
		if replicasSet {
			return nil, fmt.Errorf("--dir %s holds a fleet of %d coordinator replicas; continue it with --replicas %d, or give a new --dir for %d", dir, n, n, replicas)
		}
	}
	for _, p := range peers {
		if !portFree(p.Addr) {
			return nil, fmt.Errorf("--dir %s: replica %s's Raft address %s (recorded in %s) is taken by another process; stop it, or give a new --dir", dir, p.ID, p.Addr, FleetFile)
		}
	}
	return &fleetDir{peers: peers, continued: true}, nil
}

// peerID is a replica ID a fleet record may hold: each names the
// replica's directory inside the cluster's (DIR/ID), so a name only.
var peerID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// parseFleetRecord reads FleetFile's content: 1, 3 or 5 replicas (as
// Start runs), with distinct IDs that are plain names (an ID is a
// directory under the cluster's: "../x" or "" would put a replica's
// database outside it, or in it) and distinct loopback addresses with a
// port (a demo's replicas listen on 127.0.0.1 only: a record naming
// another address would open Raft on it).
func parseFleetRecord(b []byte) ([]coordinator.Peer, error) {
	var f fleetRecord
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	if n := len(f.Replicas); n != 1 && n != 3 && n != 5 {
		return nil, fmt.Errorf("%d replicas: want 1, 3 or 5", n)
	}
	ids, addrs := map[string]bool{}, map[string]bool{}
	for _, p := range f.Replicas {
		if !peerID.MatchString(p.ID) || ids[p.ID] {
			return nil, fmt.Errorf("replica ID %q: want a distinct name of letters, digits, '.', '_' and '-'", p.ID)
		}
		host, port, err := net.SplitHostPort(p.Addr)
		ip := net.ParseIP(host)
		n, perr := strconv.ParseUint(port, 10, 16)
		if err != nil || ip == nil || !ip.IsLoopback() || perr != nil || n == 0 || addrs[p.Addr] {
			return nil, fmt.Errorf("replica %s's address %q: want a distinct loopback IP:port", p.ID, p.Addr)
		}
		ids[p.ID], addrs[p.Addr] = true, true
	}
	return f.Replicas, nil
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
