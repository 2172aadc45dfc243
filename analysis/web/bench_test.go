package web

import (
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"dcpi/analysis/internal/fleetdbtest"
	"dcpi/analysis/report"
	"dcpi/analysis/symbolize"
)

// BenchmarkTopPage is the web UI's first paint: the server-side render of
// the hot procedures page ("/", the fleet's top 50 by cycles) over the
// fleet database — fleetdbtest.Fleet's 1,000 hosts with DCPI_BENCH_FLEETDB=dir
// (built there once), else fleetdbtest.Small's 50 hosts (the same fleet
// roll-up) in a temporary directory — beside, in the same run, the query
// dcpi prof makes for the same table (report.Prof, top 50). Both start
// from a fresh symbol cache each time, as a just-started dcpi web does;
// "page/warm" reuses the server's cache, as every later request does.
func BenchmarkTopPage(b *testing.B) {
	root := os.Getenv("DCPI_BENCH_FLEETDB")
	spec := fleetdbtest.Fleet()
	if root == "" {
		spec = fleetdbtest.Small()
		root = b.TempDir()
	}
	db, built, err := fleetdbtest.Open(root, spec)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if built != nil {
		b.Logf("built %s in %v", spec.Name(), built.Elapsed)
	}
	b.Logf("database %s (%d per-host counts)", spec.Name(), spec.Counts())
	page := func(s http.Handler) int {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		if w.Code != http.StatusOK {
			b.Fatalf("status %d\n%s", w.Code, w.Body)
		}
		return w.Body.Len()
	}
	b.Run("prof-query", func(b *testing.B) {
		for b.Loop() {
			t, err := report.Prof(b.Context(), symbolize.New(db), report.ProfQuery{Limit: DefaultTopRows})
			if err != nil || len(t.Rows) != DefaultTopRows {
				b.Fatal(err)
			}
		}
	})
	b.Run("page/cold", func(b *testing.B) {
		n := 0
		for b.Loop() {
			n = page(New(&testBackend{src: symbolize.New(db)}, b.Logf))
		}
		b.ReportMetric(float64(n), "bytes/page")
	})
	b.Run("page/warm", func(b *testing.B) {
		s := New(&testBackend{src: symbolize.New(db)}, b.Logf)
		page(s)
		for b.Loop() {
			page(s)
		}
	})
}
