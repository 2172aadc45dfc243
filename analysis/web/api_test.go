package web

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"dcpi/analysis"
	"dcpi/analysis/report"
	"dcpi/storage"
)

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%v: %s", err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return reflect.DeepEqual(x, y)
}

// TestAPIAnswersAsTheReports: each endpoint's body is the report's own
// JSON for the same query.
func TestAPIAnswersAsTheReports(t *testing.T) {
	src := fleet(true)
	b := &testBackend{src: src, hosts: []string{"alpha0", "alpha1"}}
	s := New(b, t.Logf)
	want := func(w jsonWriter, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := w.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	ctx := t.Context()
	for url, w := range map[string][]byte{
		"/api/v1/prof": want(report.Prof(ctx, src, report.ProfQuery{})),
		"/api/v1/prof?by=image&limit=1&host=alpha1": want(report.Prof(ctx, src, report.ProfQuery{By: report.ByImage, Limit: 1, Filter: storage.Query{Hosts: []string{"alpha1"}}})),
		"/api/v1/prof?by=host":                      want(b.Groups(ctx, Selection{}, "host", 0)),
		"/api/v1/stacks":                            want(report.Tree(ctx, src, report.TreeQuery{TopDown: true})),
		"/api/v1/stacks?order=bottom-up":            want(report.Tree(ctx, src, report.TreeQuery{})),
		"/api/v1/diff?a=host=alpha0&b=host=alpha1": want(report.Diff(ctx, src, report.DiffQuery{Z: report.DefaultZ,
			A: mustSet(t, b, "host=alpha0"), B: mustSet(t, b, "host=alpha1")})),
		"/api/v1/epochs": want(jsonValue{[]Epoch{{Number: 1, State: "sealed", Acked: b.hosts}}}, nil),
	} {
		code, body := get(t, s, url)
		if code != http.StatusOK || !sameJSON(t, []byte(body), w) {
			t.Errorf("%s: %d\n%s\nwant\n%s", url, code, body, w)
		}
	}
}

func mustSet(t *testing.T, b *testBackend, spec string) analysis.SampleSet {
	t.Helper()
	set, err := b.Set(t.Context(), Selection{}, spec)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestAPIErrors: bad requests are 400s, unknown endpoints 404s, each
// with {"error": ...} and never a page or a trace.
func TestAPIErrors(t *testing.T) {
	s := New(&testBackend{src: fleet(false), hosts: []string{"alpha0", "alpha1"}}, t.Logf)
	for url, c := range map[string]struct {
		code int
		want string
	}{
		"/api/v1/prof?event=bogus":             {400, `unknown event "bogus"`},
		"/api/v1/prof?limit=-2":                {400, `limit="-2": want a whole number >= 0`},
		"/api/v1/prof?view=flame":              {400, `unknown parameter "view"`},
		"/api/v1/list":                         {400, "give a procedure: proc=NAME"},
		"/api/v1/stacks?order=sideways":        {400, `order="sideways": want top-down or bottom-up`},
		"/api/v1/diff?a=epoch=1&b=host=alpha1": {400, `a: set "epoch=1": the test backend takes host=H`},
		"/api/v1/nope":                         {404, "no endpoint /api/v1/nope"},
	} {
		code, body := get(t, s, url)
		var e struct{ Error string }
		if code != c.code || json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Error, c.want) {
			t.Errorf("%s: %d %s, want %d with %q", url, code, body, c.code, c.want)
		}
	}
}

// TestOpenAPIDescribesEveryEndpoint: the description is JSON, names
// every endpoint the server has, and each endpoint's own parameters.
func TestOpenAPIDescribesEveryEndpoint(t *testing.T) {
	s := New(&testBackend{src: fleet(false)}, t.Logf)
	code, body := get(t, s, "/api/v1/openapi.json")
	var doc struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]struct {
			Get struct {
				Parameters []struct {
					Name string `json:"name"`
					Ref  string `json:"$ref"`
				} `json:"parameters"`
			} `json:"get"`
		} `json:"paths"`
	}
	if err := json.Unmarshal([]byte(body), &doc); code != 200 || err != nil || doc.OpenAPI == "" {
		t.Fatalf("openapi.json: %d, %v", code, err)
	}
	for _, name := range slices.Sorted(maps.Keys(apiParams)) {
		p, ok := doc.Paths[apiVersion+name]
		if !ok {
			t.Errorf("openapi.json has no %s%s", apiVersion, name)
			continue
		}
		var named []string
		for _, q := range p.Get.Parameters {
			if q.Name != "" {
				named = append(named, q.Name)
			}
		}
		for _, want := range apiParams[name] {
			if !slices.Contains(named, want) {
				t.Errorf("openapi.json: %s lacks its parameter %s", name, want)
			}
		}
	}
}

// TestGrafanaDashboardQueriesTheAPI: the example dashboard is JSON and
// every URL it reads is an endpoint the server has.
func TestGrafanaDashboardQueriesTheAPI(t *testing.T) {
	b, err := os.ReadFile("../../examples/grafana/dcpi-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				URL string `json:"url"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil || len(d.Panels) == 0 {
		t.Fatalf("dashboard: %v", err)
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			path, _, _ := strings.Cut(tg.URL, "?")
			name, ok := strings.CutPrefix(path, apiVersion)
			if _, known := apiParams[name]; !ok || !known {
				t.Errorf("panel %q reads %s, not an endpoint", p.Title, tg.URL)
			}
		}
	}
}
