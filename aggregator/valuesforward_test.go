package aggregator

import (
	"context"
	"errors"
	"testing"
	"time"

	"dcpi/internal/hotlist"
	"dcpi/storage"
	"dcpi/wire"
	"dcpi/wire/delivery"
)

// memValues is one fetched value record in memory, recording how it was
// settled.
type memValues struct {
	r                  *wire.ValuesRecord
	err                error
	acked, naked, term int
}

func (d *memValues) Record() *wire.ValuesRecord     { return d.r }
func (d *memValues) Err() error                     { return d.err }
func (d *memValues) Ack(context.Context) error      { d.acked++; return nil }
func (d *memValues) Nak(time.Duration) error        { d.naked++; return nil }
func (d *memValues) Term(string) error              { d.term++; return nil }
func deliveries(ds ...*memValues) []delivery.Values { return toValues(ds) }

func toValues(ds []*memValues) []delivery.Values {
	out := make([]delivery.Values, len(ds))
	for i, d := range ds {
		out[i] = d
	}
	return out
}

// dbValues proposes straight to a database, counting proposals.
type dbValues struct {
	db        *storage.DB
	proposals int
}

func (p *dbValues) IngestValues(_ context.Context, first uint64, r *wire.ValuesRecord) (storage.Outcome, error) {
	p.proposals++
	return p.db.ApplyValuesWith(first, r, nil)
}

func valueRec(host string, epoch, seq uint64) *memValues {
	var l hotlist.List
	coin := hotlist.NewCoin(seq)
	for i := range 10 {
		l.Offer(uint64(3+140*(i%2)), coin)
	}
	return &memValues{r: &wire.ValuesRecord{Version: 1, Host: host, Epoch: epoch, Seq: seq, Module: "loadlat",
		Stats: wire.ValueStats{Interrupts: 10, Completed: 10, Values: 10},
		Lists: []wire.ValueList{{Image: wire.MustParseImageKey("sha256:0202020202020202020202020202020202020202020202020202020202020202"), Offset: 8, Kind: 1, List: l}}}}
}

// TestValuesForwarder: one fetch's records merge per host into runs of
// consecutive Seqs in one epoch (one proposal each), are acknowledged
// after the commit, a redelivered twin is settled with its original, a
// record after a missing one is handed back (Gap) and applied once the
// missing one has come, a run part of which is stored is proposed record
// by record (Overlap), and a record that did not decode is terminated.
// Every interrupt is stored exactly once.
func TestValuesForwarder(t *testing.T) {
	db := openTestDB(t)
	p := &dbValues{db: db}
	f := NewValuesForwarder(Config{}, nil, p)
	ctx := context.Background()

	a1, a2, a3, a4 := valueRec("a", 1, 1), valueRec("a", 1, 2), valueRec("a", 1, 3), valueRec("a", 2, 4)
	twin := valueRec("a", 1, 2)
	b2 := valueRec("b", 1, 2) // b's record 1 is missing
	bad := &memValues{err: errors.New("wire: values record: version 2")}
	f.Handle(ctx, deliveries(a3, b2, a1, twin, a2, a4, bad))
	// a: run 1..3 (epoch 1) and run 4 (epoch 2); b: 2 alone (a gap).
	if p.proposals != 3 {
		t.Errorf("%d proposals, want 3", p.proposals)
	}
	for _, d := range []*memValues{a1, a2, twin, a3, a4} {
		if d.acked != 1 || d.naked != 0 {
			t.Errorf("a/%d: acked %d, naked %d", d.r.Seq, d.acked, d.naked)
		}
	}
	if b2.naked != 1 || b2.acked != 0 || bad.term != 1 {
		t.Errorf("b/2: acked %d, naked %d; bad record terminated %d times", b2.acked, b2.naked, bad.term)
	}
	b1 := valueRec("b", 1, 1)
	f.Handle(ctx, deliveries(b1))
	f.Handle(ctx, deliveries(b2)) // its redelivery
	if b1.acked != 1 || b2.acked != 1 {
		t.Errorf("b: acked %d and %d", b1.acked, b2.acked)
	}
	// A redelivered run that overlaps what is stored: b/2 is stored, b/3
	// is new.
	b3 := valueRec("b", 1, 3)
	again := valueRec("b", 1, 2)
	before := p.proposals
	f.Handle(ctx, deliveries(again, b3))
	if p.proposals-before != 3 || again.acked != 1 || b3.acked != 1 {
		t.Errorf("overlap: %d proposals (want the run, then 2 singles), acked %d and %d", p.proposals-before, again.acked, b3.acked)
	}
	_, s, err := db.ValueTotals(ctx, storage.ValueQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Interrupts != 10*7 {
		t.Errorf("stored %d interrupts, want %d (seven records once each)", s.Interrupts, 70)
	}
	st := f.Stats()
	if st.Rejected != 1 || st.Gaps != 1 || st.Overlaps != 1 || st.Applied != 7 {
		t.Errorf("stats %+v", st)
	}
}
