package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"dcpi/coordinator"
	"dcpi/storage"
	"dcpi/wire"
)

// replicaState is everything a stopped replica's profile database holds
// that the replicas must agree on, each part as indented JSON so that a
// difference can be shown as lines.
type replicaState struct {
	id    string
	parts map[string]string
	// Figures for the conservation check.
	total       uint64            // samples + unknown + every drop
	hostTotal   map[string]uint64 // the same per host
	hosts       []string
	mallorySeen bool // the forging host has something stored
}

// replicaParts are the parts compared, in order.
var replicaParts = []string{"totals", "host-totals", "records", "unknown", "epochs", "acks", "nodes", "hosts", "applied"}

// readReplica opens a stopped replica's profile database read-only and
// reads everything in it.
func readReplica(id, dataDir string, cpus int) (*replicaState, error) {
	dir, err := coordinator.ProfileDBDir(dataDir)
	if err != nil {
		return nil, err
	}
	db, err := storage.Open(dir, storage.Options{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("replica %s: open %s: %w", id, dir, err)
	}
	defer db.Close()
	rs := &replicaState{id: id, parts: map[string]string{}, hostTotal: map[string]uint64{}}
	put := func(name string, v any) error {
		b, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			return fmt.Errorf("replica %s: %s: %w", id, name, err)
		}
		rs.parts[name] = string(b)
		return nil
	}
	type totals struct {
		Samples, Unknown uint64
		Drops            map[string]uint64
	}
	sum := func(q storage.Query) (totals, uint64, error) {
		s, u, d, err := db.Totals(q)
		t := totals{s, u, d}
		all := s + u
		for _, n := range d {
			all += n
		}
		return t, all, err
	}
	t, all, err := sum(storage.Query{})
	if err != nil {
		return nil, fmt.Errorf("replica %s: %w", id, err)
	}
	rs.total = all
	if err := put("totals", t); err != nil {
		return nil, err
	}
	if rs.hosts, err = db.Hosts(); err != nil {
		return nil, fmt.Errorf("replica %s: %w", id, err)
	}
	if err := put("hosts", rs.hosts); err != nil {
		return nil, err
	}
	perHost := map[string]totals{}
	applied := map[string]uint64{}
	for _, h := range rs.hosts {
		ht, hall, err := sum(storage.Query{Hosts: []string{h}})
		if err != nil {
			return nil, fmt.Errorf("replica %s: host %s: %w", id, h, err)
		}
		perHost[h], rs.hostTotal[h] = ht, hall
		for _, cpu := range append(seqCPUs(cpus), wire.AllCPUs) {
			seq, err := db.Applied(h, cpu)
			if err != nil {
				return nil, fmt.Errorf("replica %s: applied %s/%d: %w", id, h, cpu, err)
			}
			applied[fmt.Sprintf("%s/%d", h, cpu)] = seq
		}
	}
	rs.mallorySeen = rs.hostTotal[forgerHost] != 0
	if err := put("host-totals", perHost); err != nil {
		return nil, err
	}
	if err := put("applied", applied); err != nil {
		return nil, err
	}
	var recs []storage.Record
	if err := db.Records(storage.Query{}, func(r storage.Record) error { recs = append(recs, r); return nil }); err != nil {
		return nil, fmt.Errorf("replica %s: records: %w", id, err)
	}
	if err := put("records", recs); err != nil {
		return nil, err
	}
	var unk []storage.UnknownRecord
	if err := db.Unknown(storage.Query{}, func(r storage.UnknownRecord) error { unk = append(unk, r); return nil }); err != nil {
		return nil, fmt.Errorf("replica %s: unknown: %w", id, err)
	}
	if err := put("unknown", unk); err != nil {
		return nil, err
	}
	eps, err := db.Epochs()
	if err != nil {
		return nil, fmt.Errorf("replica %s: epochs: %w", id, err)
	}
	if err := put("epochs", eps); err != nil {
		return nil, err
	}
	acks := map[uint64][]storage.EpochAck{}
	for _, e := range eps {
		a, err := db.EpochAcks(e.Number)
		if err != nil {
			return nil, fmt.Errorf("replica %s: acks of epoch %d: %w", id, e.Number, err)
		}
		acks[e.Number] = a
	}
	if err := put("acks", acks); err != nil {
		return nil, err
	}
	nodes, err := db.Nodes()
	if err != nil {
		return nil, fmt.Errorf("replica %s: nodes: %w", id, err)
	}
	if err := put("nodes", nodes); err != nil {
		return nil, err
	}
	return rs, nil
}

func seqCPUs(n int) []uint16 {
	cpus := make([]uint16, n)
	for i := range cpus {
		cpus[i] = uint16(i)
	}
	return cpus
}

// diffReplicas compares b with a part by part and describes the first
// difference of each part that differs; it writes both versions of such a
// part to dir for a full diff.
func diffReplicas(a, b *replicaState, dir string) []string {
	var out []string
	for _, name := range replicaParts {
		pa, pb := a.parts[name], b.parts[name]
		if pa == pb {
			continue
		}
		la, lb := strings.Split(pa, "\n"), strings.Split(pb, "\n")
		i := 0
		for i < len(la) && i < len(lb) && la[i] == lb[i] {
			i++
		}
		show := func(ls []string) string {
			lo, hi := max(0, i-6), min(len(ls), i+6)
			return strings.Join(ls[lo:hi], "\n")
		}
		fa := filepath.Join(dir, fmt.Sprintf("replica-%s-%s.json", a.id, name))
		fb := filepath.Join(dir, fmt.Sprintf("replica-%s-%s.json", b.id, name))
		os.WriteFile(fa, []byte(pa), 0o644)
		os.WriteFile(fb, []byte(pb), 0o644)
		out = append(out, fmt.Sprintf("%s differs between replicas %s and %s (%d and %d lines), first at line %d (diff %s %s):\n--- %s:\n%s\n--- %s:\n%s",
			name, a.id, b.id, len(la), len(lb), i+1, fa, fb, a.id, show(la), b.id, show(lb)))
	}
	return out
}
