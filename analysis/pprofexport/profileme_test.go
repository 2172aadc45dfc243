package pprofexport

import (
	"bytes"
	"context"
	"testing"

	"dcpi/analysis/internal/analysistest"
	"dcpi/analysis/symbolize"
	"dcpi/storage"
	"dcpi/wire"
)

// meRows serves fixed ProfileMe rows (profileme.Source).
type meRows []storage.MeRow

func (m meRows) MeProfile(_ context.Context, q storage.Query, fn func(*storage.MeRow) error) error {
	for i := range m {
		if len(q.Hosts) > 0 && q.Hosts[0] != m[i].Host {
			continue
		}
		if err := fn(&m[i]); err != nil {
			return err
		}
	}
	return nil
}

// TestExportProfileMe: dcpi me --pprof's export holds one sample per
// sampled instruction with fetched = k·S, its summary says so, and a
// selection without samples is refused rather than written empty.
func TestExportProfileMe(t *testing.T) {
	syms := symbolize.New(analysistest.Fleet())
	var a, b storage.MeRow
	a.Image, a.Offset, a.Host = analysistest.Key(1), 0x210, "alpha"
	a.Counts[wire.MeSamples], a.Counts[wire.MeRetired] = 3, 3
	b.Image, b.Offset, b.Host = analysistest.Key(1), 0x260, "alpha"
	b.Counts[wire.MeSamples], b.Counts[wire.MeRetired] = 2, 1
	src := meRows{a, b}
	ex, err := ExportProfileMe(context.Background(), syms, src, ProfileMeQuery{Interval: 50})
	if err != nil {
		t.Fatal(err)
	}
	var fetched int64
	for _, s := range ex.Profile.Sample {
		fetched += s.Value[0]
	}
	if len(ex.Profile.Sample) != 2 || fetched != 5*50 || ex.Profile.SampleType[0].Type != "fetched" || ex.Interval != 50 {
		t.Fatalf("export: %d samples, fetched %d, types %v", len(ex.Profile.Sample), fetched, ex.Profile.SampleType)
	}
	var sum bytes.Buffer
	if err := ex.WriteSummary(&sum, "me.pb.gz"); err != nil {
		t.Fatal(err)
	}
	want := "wrote me.pb.gz: 2 sampled instructions in 1 images, 16 sample types (default fetched; S = 50)\n"
	if sum.String() != want {
		t.Errorf("summary %q, want %q", sum.String(), want)
	}
	_, err = ExportProfileMe(context.Background(), syms, src, ProfileMeQuery{Interval: 50, Filter: storage.Query{Hosts: []string{"nobody"}}})
	if err == nil || err.Error() != "no ProfileMe samples selected (were the nodes run with --profileme?)" {
		t.Fatalf("empty selection: %v", err)
	}
}
