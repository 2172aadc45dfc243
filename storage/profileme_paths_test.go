package storage

import (
	"fmt"
	"maps"
	"testing"

	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// TestProfileMeHistoryAndAddresses applies random ProfileMe version 2
// streams of two hosts and two CPUs each, with redeliveries: the stored
// (PC, history) counts equal the batches' applied once, fleet-wide and by
// host; they sum to the stored samples (every batch's history counts sum
// to its entries' samples); the history drops add up; the address lists
// of one instruction, merged across CPUs, hosts and calls, hold the
// samples of every list applied (N adds; Gibbons-Matias thins the counts,
// never the samples) and stay valid.
func TestProfileMeHistoryAndAddresses(t *testing.T) {
	r := testRand(t)
	db, _ := openTest(t)
	images := wiretest.Keys(2)
	hist := map[string]uint64{}  // image/offset/history/host
	addrN := map[string]uint64{} // image/offset/host
	var dropped, samples uint64
	for _, host := range []string{"h1", "h2"} {
		for cpu := range uint16(2) {
			var ds []Delta
			for seq := uint64(1); seq <= 6; seq++ {
				b := wiretest.RandBatch(r, wiretest.Options{Host: host, CPU: cpu, Seq: seq, Epoch: 1, MaxEntries: 3, Images: images})
				wiretest.AddMe(r, b, images, 5, 8)
				wiretest.AddMeV2(r, b)
				for _, h := range b.MeHist {
					hist[fmt.Sprintf("%v/%d/%d/%s", h.Image, h.Offset, h.History, host)] += h.Count
				}
				for _, a := range b.MeAddrs {
					addrN[fmt.Sprintf("%v/%d/%s", a.Image, a.Offset, host)] += a.List.N
				}
				for _, e := range b.Me {
					samples += e.Counts[wire.MeSamples]
				}
				dropped += b.MeHistDropped
				ds = append(ds, Delta{Batch: b, Last: seq})
				if seq%3 == 0 {
					ds = append(ds, Delta{Batch: wiretest.Clone(b), Last: seq})
				}
			}
			if _, err := db.ApplyDeltas(ds); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, hosts := range [][]string{nil, {"h1"}, {"h1", "h2"}} {
		got := map[string]uint64{}
		var sum uint64
		if err := db.MeHistory(t.Context(), Query{Hosts: hosts}, func(h *MeHistRow) error {
			got[fmt.Sprintf("%v/%d/%d", h.Image, h.Offset, h.History)] += h.Count
			sum += h.Count
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		want := map[string]uint64{}
		for k, n := range hist { // the host is the key's last two bytes
			if hosts == nil || in(hosts, k[len(k)-2:]) {
				want[k[:len(k)-3]] += n
			}
		}
		if !maps.Equal(got, want) {
			t.Fatalf("hosts %v: history %v\nwant %v", hosts, got, want)
		}
		if hosts == nil && sum != samples {
			t.Fatalf("history counts sum to %d, the samples stored to %d", sum, samples)
		}
	}
	if n, err := db.MeHistDropped(Query{}); err != nil || n != dropped {
		t.Fatalf("history dropped %d (%v), want %d", n, err, dropped)
	}
	k, _, _, err := db.MeTotals(Query{})
	if err != nil || k != samples {
		t.Fatalf("MeTotals %d (%v), want %d: history drops must not count as samples", k, err, samples)
	}
	for _, hosts := range [][]string{nil, {"h2"}} {
		got := map[string]uint64{}
		if err := db.MeAddrs(t.Context(), Query{Hosts: hosts}, func(a *MeAddrRow) error {
			if err := a.List.Check(); err != nil {
				t.Fatalf("merged list %+v: %v", a.List, err)
			}
			got[fmt.Sprintf("%v/%d", a.Image, a.Offset)] = a.List.N
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		want := map[string]uint64{}
		for k, n := range addrN {
			if hosts == nil || in(hosts, k[len(k)-2:]) {
				want[k[:len(k)-3]] += n
			}
		}
		if !maps.Equal(got, want) {
			t.Fatalf("hosts %v: address list samples %v\nwant %v", hosts, got, want)
		}
	}
}
