package coordinator

import (
	"slices"
	"testing"
	"time"

	"dcpi/storage"
	"dcpi/wire"
)

func TestSealable(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	closing := storage.Epoch{Number: 5, Start: t0, End: t0.Add(time.Minute), State: storage.EpochClosing}
	a := storage.Node{Host: "a", CPUs: 2, Registered: t0}
	b := storage.Node{Host: "b", CPUs: 1, Registered: t0}
	late := storage.Node{Host: "new", CPUs: 1, Registered: t0.Add(2 * time.Minute)} // joined after the cut
	ack := func(host string, seqs ...uint64) storage.EpochAck {
		return storage.EpochAck{Epoch: 5, Host: host, LastSeq: seqs}
	}
	type stream struct {
		host string
		cpu  uint16
	}
	tests := []struct {
		name    string
		epoch   storage.Epoch
		nodes   []storage.Node
		acks    []storage.EpochAck
		dead    []string
		applied map[stream]uint64
		ok      bool
		waiting []string
	}{
		{name: "no nodes", epoch: closing, ok: true},
		{name: "open epoch never seals", epoch: storage.Epoch{Number: 5, State: storage.EpochOpen}},
		{name: "sealed epoch is not due again", epoch: storage.Epoch{Number: 5, State: storage.EpochSealed}},
		{name: "all acked and applied", epoch: closing, nodes: []storage.Node{a, b},
			acks:    []storage.EpochAck{ack("a", 3, 0), ack("b", 9)},
			applied: map[stream]uint64{{"a", 0}: 3, {"b", 0}: 10}, ok: true},
		{name: "missing ack", epoch: closing, nodes: []storage.Node{a, b},
			acks: []storage.EpochAck{ack("a", 0, 0)}, waiting: []string{"b: no ack"}},
		{name: "acked but not applied", epoch: closing, nodes: []storage.Node{a, b},
			acks:    []storage.EpochAck{ack("a", 3, 4), ack("b")},
			applied: map[stream]uint64{{"a", 0}: 3, {"a", 1}: 2},
			waiting: []string{"a cpu 1: applied seq 2 of 4"}},
		{name: "daemon stream is the extra element", epoch: closing, nodes: []storage.Node{b},
			acks:    []storage.EpochAck{ack("b", 1, 6)},
			applied: map[stream]uint64{{"b", 0}: 1, {"b", wire.AllCPUs}: 5},
			waiting: []string{"b cpu 65535: applied seq 5 of 6"}},
		{name: "dead node is not waited for", epoch: closing, nodes: []storage.Node{a, b},
			acks: []storage.EpochAck{ack("a")}, dead: []string{"b"}, ok: true},
		{name: "dead node's unapplied ack is not waited for", epoch: closing, nodes: []storage.Node{a, b},
			acks: []storage.EpochAck{ack("a"), ack("b", 100)}, dead: []string{"b"}, ok: true},
		{name: "node registered after the cut is not waited for", epoch: closing, nodes: []storage.Node{a, late},
			acks: []storage.EpochAck{ack("a")}, ok: true},
		{name: "ack of an unregistered host is ignored", epoch: closing, nodes: []storage.Node{a},
			acks: []storage.EpochAck{ack("a"), ack("ghost", 50)}, ok: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, waiting := Sealable(SealInput{
				Epoch: tc.epoch, Nodes: tc.nodes, Acks: tc.acks,
				Live:    func(h string) bool { return !slices.Contains(tc.dead, h) },
				Applied: func(h string, cpu uint16) uint64 { return tc.applied[stream{h, cpu}] },
			})
			if ok != tc.ok || !slices.Equal(waiting, tc.waiting) {
				t.Errorf("Sealable = %v %q; want %v %q", ok, waiting, tc.ok, tc.waiting)
			}
		})
	}
}
