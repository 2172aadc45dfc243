package transport

import (
	"testing"
	"time"

	"dcpi/wire"
)

func retItem(cpu uint16, seq, samples uint64) *item {
	return &item{hdr: wire.Batch{CPU: cpu, Seq: seq}, samples: samples, id: msgID("h", 1, cpu, seq), data: make([]byte, 100)}
}

// TestRetention: batches leave the retention only when applied, a stalled
// stream (and only it) is returned for sending again once per stall, and
// the counts stay the sum of what is held.
func TestRetention(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := newRetention(3 * retItem(0, 1, 1).size())
	for seq := uint64(1); seq <= 3; seq++ {
		r.add(retItem(0, seq, 10), t0)
	}
	r.add(retItem(1, 1, 5), t0)
	if !r.full() || r.batches != 4 || r.samples != 35 {
		t.Fatalf("after 4 adds: full %v batches %d samples %d", r.full(), r.batches, r.samples)
	}
	if n := r.release(0, 2, t0.Add(time.Second)); n != 2 {
		t.Errorf("release through 2 dropped %d, want 2", n)
	}
	if r.full() || r.batches != 2 || r.samples != 15 {
		t.Errorf("after release: full %v batches %d samples %d", r.full(), r.batches, r.samples)
	}
	// CPU 1 has not moved since t0, CPU 0 since t0+1s.
	got := r.stalled(t0.Add(1500*time.Millisecond), time.Second)
	if len(got) != 1 || got[0].hdr.CPU != 1 || got[0].hdr.Seq != 1 {
		t.Fatalf("stalled at t0+1.5s: %v, want CPU 1 seq 1", got)
	}
	if again := r.stalled(t0.Add(1600*time.Millisecond), time.Second); len(again) != 0 {
		t.Errorf("stalled again 0.1 s after a republish: %d batches", len(again))
	}
	got = r.stalled(t0.Add(2100*time.Millisecond), time.Second)
	if len(got) != 1 || got[0].hdr.CPU != 0 || got[0].hdr.Seq != 3 {
		t.Errorf("stalled at t0+2.1s: %v, want CPU 0 seq 3", got)
	}
	// An acknowledgement that comes back after the apply is not held.
	r.add(retItem(0, 2, 10), t0)
	if r.batches != 2 {
		t.Errorf("an applied batch was retained: %d batches", r.batches)
	}
	r.release(0, 3, t0)
	r.release(1, 1, t0)
	if r.batches != 0 || r.samples != 0 || r.bytes != 0 || len(r.cpus()) != 0 {
		t.Errorf("all applied: batches %d samples %d bytes %d cpus %v", r.batches, r.samples, r.bytes, r.cpus())
	}
}

// TestRetentionBackoff: a stream that stays stalled is sent again after
// after, then 2x, 4x, ... up to maxRepublishBackoff times after between
// resends; its applied Seq moving brings the wait back to after.
func TestRetentionBackoff(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := newRetention(1 << 20)
	r.add(retItem(0, 1, 10), t0)
	r.add(retItem(0, 2, 10), t0)
	const after = time.Second
	var resends []time.Duration
	for at := time.Duration(0); at <= 60*time.Second; at += 100 * time.Millisecond {
		if len(r.stalled(t0.Add(at), after)) > 0 {
			resends = append(resends, at)
		}
	}
	want := []time.Duration{1, 3, 7, 15, 31, 47}
	if len(resends) != len(want) {
		t.Fatalf("resends at %v, want at %v s", resends, want)
	}
	for i, w := range want {
		if resends[i] != w*time.Second {
			t.Fatalf("resends at %v, want at %v s", resends, want)
		}
	}
	// Progress: the wait is after again.
	now := t0.Add(61 * time.Second)
	r.release(0, 1, now)
	if got := r.stalled(now.Add(after-time.Millisecond), after); len(got) != 0 {
		t.Errorf("sent again before after passed since progress: %d", len(got))
	}
	if got := r.stalled(now.Add(after), after); len(got) != 1 || got[0].hdr.Seq != 2 {
		t.Errorf("not sent again after after since progress: %v", got)
	}
}
