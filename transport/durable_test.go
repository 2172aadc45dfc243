package transport

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dcpi/wire"
	"dcpi/wire/wiretest"
)

// memApplier is the in-memory twin of the aggregators and the coordinator
// for the publisher's end-to-end tests: it consumes the batch stream and
// applies each (host, CPU) stream's batches in Seq order as the state
// machine does (storage.ApplyDeltas): the next one is applied, one at or
// below the applied Seq is a duplicate, one beyond it a gap (handed back
// with a delay). It acks a batch only after applying it.
type memApplier struct {
	mu      sync.Mutex
	applied map[streamKey]uint64
	samples uint64 // stored: samples of applied batches
	drops   uint64 // samples in the applied batches' drop counters
	dups    int
	cancel  context.CancelFunc
	done    chan struct{}
}

// streamKey names one batch stream.
type streamKey struct {
	host string
	cpu  uint16
}

func newMemApplier() *memApplier { return &memApplier{applied: map[streamKey]uint64{}} }

// start consumes js's stream until stop.
func (a *memApplier) start(t testing.TB, js jetstream.JetStream) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := NewConsumer(testCtx(t, 10*time.Second), js, ConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	a.cancel, a.done = cancel, make(chan struct{})
	go func() {
		defer close(a.done)
		for ctx.Err() == nil {
			ds, err := c.Fetch(ctx, 256, 100*time.Millisecond)
			if err != nil {
				time.Sleep(20 * time.Millisecond) // the server is away
				continue
			}
			for i := range ds {
				a.apply(ctx, &ds[i])
			}
		}
	}()
}

func (a *memApplier) stop() {
	if a.cancel != nil {
		a.cancel()
		<-a.done
		a.cancel = nil
	}
}

func (a *memApplier) apply(ctx context.Context, d *Delivery) {
	if d.Err != nil {
		_ = d.Term(d.Err.Error())
		return
	}
	b := d.Batch
	a.mu.Lock()
	k := streamKey{b.Host, b.CPU}
	switch last := a.applied[k]; {
	case b.Seq == last+1:
		a.applied[k] = b.Seq
		a.samples += b.Total()
		for _, n := range b.Drops {
			a.drops += n
		}
	case b.Seq <= last:
		a.dups++
	default:
		a.mu.Unlock()
		_ = d.Nak(50 * time.Millisecond)
		return
	}
	a.mu.Unlock()
	_ = d.Ack(ctx)
}

// appliedFunc is host's AppliedFunc.
func (a *memApplier) appliedFunc(host string) AppliedFunc {
	return func(_ context.Context, cpus []uint16) ([]uint64, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		out := make([]uint64, len(cpus))
		for i, cpu := range cpus {
			out[i] = a.applied[streamKey{host, cpu}]
		}
		return out, nil
	}
}

func (a *memApplier) totals() (samples, drops uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.samples, a.drops
}

// powerLoss is a NATS server whose disk can lose what was written since
// its last sync point. A sync point is a clean stop (nats-server syncs its
// file store on shutdown), after which the test copies the store: the
// disk as an fsync left it. A power loss stops the server and puts that
// copy back, so everything the server acknowledged since the sync point —
// messages, consumer acknowledgements, deduplication state — is gone, as
// it is when the page cache dies with sync_interval's fsync not yet come.
type powerLoss struct {
	t      testing.TB
	dir    string // the store
	synced string // the store at the last sync point
	port   int
	srv    *Server
}

func startPowerLoss(t testing.TB) *powerLoss {
	t.Helper()
	root := t.TempDir()
	pl := &powerLoss{t: t, dir: filepath.Join(root, "store"), synced: filepath.Join(root, "synced")}
	pl.start()
	pl.port = pl.srv.Port()
	t.Cleanup(func() {
		if pl.srv != nil {
			pl.srv.Shutdown()
		}
	})
	return pl
}

func (pl *powerLoss) start() {
	pl.t.Helper()
	srv, err := StartServer(ServerConfig{Dir: pl.dir, Port: pl.port})
	if err != nil {
		pl.t.Fatal(err)
	}
	pl.srv = srv
}

// syncPoint stops the server cleanly, keeps its store as the disk's
// synced state, and starts it again.
func (pl *powerLoss) syncPoint() {
	pl.t.Helper()
	pl.srv.Shutdown()
	os.RemoveAll(pl.synced)
	if out, err := exec.Command("cp", "-a", pl.dir, pl.synced).CombinedOutput(); err != nil {
		pl.t.Fatalf("copy the store: %v: %s", err, out)
	}
	pl.start()
}

// lose stops the server and puts the store back to the last sync point,
// then starts it again.
func (pl *powerLoss) lose() {
	pl.t.Helper()
	pl.srv.Shutdown()
	if err := os.RemoveAll(pl.dir); err != nil {
		pl.t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", pl.synced, pl.dir).CombinedOutput(); err != nil {
		pl.t.Fatalf("restore the store: %v: %s", err, out)
	}
	pl.start()
}

// TestPowerLossRepublish: a NATS server loses every batch it acknowledged
// since its last sync point. With the end-to-end acknowledgment the
// publisher still holds them (unapplied) and sends them again once their
// streams stall, so every stream is applied to its last Seq and
// stored + dropped = accepted, exactly. Without it (the control) the lost
// batches are gone and the streams stop at the sync point: the test would
// fail if retention did nothing.
func TestPowerLossRepublish(t *testing.T) {
	for _, e2e := range []bool{true, false} {
		t.Run(fmt.Sprintf("end-to-end=%v", e2e), func(t *testing.T) {
			r := testRand(t)
			pl := startPowerLoss(t)
			nc, js := connect(t, pl.srv.ClientURL())
			ensure(t, js)
			app := newMemApplier()
			cfg := PublisherConfig{Host: "alpha0", AckTimeout: time.Second, MaxBackoff: 200 * time.Millisecond}
			if e2e {
				cfg.Applied, cfg.AppliedPoll, cfg.RepublishAfter = app.appliedFunc("alpha0"), 50*time.Millisecond, 500*time.Millisecond
			}
			p, err := NewPublisher(nc, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(context.Background())
			keys := wiretest.Keys(3)
			const cpus, perPhase = 4, 10
			seq, genDrops := uint64(0), uint64(0)
			publish := func() {
				for range perPhase {
					seq++
					for cpu := range uint16(cpus) {
						b := streamBatch(r, "alpha0", 1, cpu, seq, 50, keys)
						for _, n := range b.Drops {
							genDrops += n
						}
						if err := p.PublishBatch(b); err != nil {
							t.Fatal(err)
						}
					}
				}
				flush(t, p, 20*time.Second)
			}
			// Phase A: published, applied, then synced.
			app.start(t, js)
			publish()
			waitApplied(t, app, "alpha0", cpus, seq, 20*time.Second)
			app.stop()
			pl.syncPoint()
			waitConnected(t, nc)
			// Phase B: acknowledged by JetStream but not yet applied (the
			// aggregators lag) when the power goes.
			publish()
			if n := streamMsgs(t, js); n != cpus*perPhase {
				t.Fatalf("before the power loss the stream holds %d batches, want %d", n, cpus*perPhase)
			}
			pl.lose()
			waitConnected(t, nc)
			if n := streamMsgs(t, js); n != 0 {
				t.Fatalf("after the power loss the stream holds %d batches, want 0 (lost)", n)
			}
			app.start(t, js)
			defer app.stop()
			st := p.Stats()
			if !e2e {
				time.Sleep(time.Second)
				for cpu := range uint16(cpus) {
					if got, _ := app.appliedFunc("alpha0")(nil, []uint16{cpu}); got[0] != perPhase {
						t.Errorf("control: CPU %d applied to %d, want %d (the lost batches are lost)", cpu, got[0], perPhase)
					}
				}
				return
			}
			if st.RetainedBatches != cpus*perPhase {
				t.Errorf("retained %d batches before the republish, want %d", st.RetainedBatches, cpus*perPhase)
			}
			waitApplied(t, app, "alpha0", cpus, seq, 30*time.Second)
			if err := p.WaitApplied(testCtx(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
			st = p.Stats()
			stored, dropped := app.totals()
			if stored != st.SamplesAccepted || dropped != genDrops || st.Republished < cpus*perPhase || st.RetainedBatches != 0 {
				t.Errorf("stored %d != accepted %d, or dropped %d != the batches' %d, or republished %d < %d, or %d still retained (stats %+v)",
					stored, st.SamplesAccepted, dropped, genDrops, st.Republished, cpus*perPhase, st.RetainedBatches, st)
			}
		})
	}
}

// waitStream waits until app has applied stream k to seq.
func waitStream(t testing.TB, app *memApplier, k streamKey, seq uint64, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if got, _ := app.appliedFunc(k.host)(nil, []uint16{k.cpu}); got[0] >= seq {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s CPU %d not applied to %d after %v", k.host, k.cpu, seq, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitApplied waits until app has applied every CPU's stream to seq.
func waitApplied(t testing.TB, app *memApplier, host string, cpus int, seq uint64, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		done := true
		for cpu := range uint16(cpus) {
			if got, _ := app.appliedFunc(host)(nil, []uint16{cpu}); got[0] < seq {
				done = false
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			app.mu.Lock()
			defer app.mu.Unlock()
			t.Fatalf("applied %v after %v, want every CPU at %d", app.applied, d, seq)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitConnected waits until nc has reconnected after a server restart.
func waitConnected(t testing.TB, nc *nats.Conn) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !nc.IsConnected(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not reconnected after 10 s: %v", nc.Status())
		}
	}
}

// BenchmarkPublishDurability measures, in one run, what each way of
// surviving a NATS power loss costs a fleet's publishing: 8 hosts publish
// 4-CPU streams of 100-entry batches through one server on this disk, and
// an in-memory applier (the twin of the aggregators and the coordinator)
// applies them. An op is one batch, published and applied.
//
//   - default: the file store fsyncs every 2 minutes (nats-server's
//     default); a power loss loses what was acknowledged since.
//   - sync-always: the server fsyncs every message before acknowledging it.
//   - end-to-end: the default server, and every publisher retains its
//     batches until the applier reports them applied (polled every 1 s).
//
// The time is from the first publish to the last batch applied.
//
// go test -run '^$' -bench PublishDurability -benchtime 4000x ./transport/
func BenchmarkPublishDurability(b *testing.B) {
	for _, mode := range []string{"default", "sync-always", "end-to-end"} {
		b.Run(mode, func(b *testing.B) {
			srv, err := StartServer(ServerConfig{Dir: b.TempDir(), SyncAlways: mode == "sync-always"})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Shutdown()
			nc, js := connect(b, srv.ClientURL())
			ensure(b, js)
			app := newMemApplier()
			app.start(b, js)
			defer app.stop()
			const hosts, cpus = 8, 4
			pubs := make([]*Publisher, hosts)
			for h := range pubs {
				name := fmt.Sprintf("alpha%d", h)
				cfg := PublisherConfig{Host: name, MaxBufferedBytes: 256 << 20}
				if mode == "end-to-end" {
					cfg.Applied = app.appliedFunc(name)
				}
				if pubs[h], err = NewPublisher(nc, cfg); err != nil {
					b.Fatal(err)
				}
				defer pubs[h].Close(context.Background())
			}
			r := testRand(b)
			keys := wiretest.Keys(4)
			batches := make([]*wire.Batch, b.N)
			seqs := map[streamKey]uint64{}
			for i := range batches {
				h, cpu := i%hosts, uint16(i/hosts%cpus)
				k := streamKey{fmt.Sprintf("alpha%d", h), cpu}
				seqs[k]++
				batches[i] = wiretest.RandBatch(r, wiretest.Options{Host: k.host, CPU: cpu, Seq: seqs[k], Epoch: 1,
					MaxEntries: 100, Images: keys, Offsets: 1 << 16})
			}
			b.ResetTimer()
			for i, bt := range batches {
				if err := pubs[i%hosts].PublishBatch(bt); err != nil {
					b.Fatal(err)
				}
			}
			for k, seq := range seqs {
				waitStream(b, app, k, seq, 10*time.Minute)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "batches/s")
			// Retention ends one applied poll later; not part of the
			// throughput, but it must end.
			for _, p := range pubs {
				if err := p.WaitApplied(testCtx(b, time.Minute)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
