package web

import (
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"testing"
)

// fuzzPages are the pages FuzzParseRequest requests, by its first input.
var fuzzPages = []string{"top", "list", "flame", "diff", "epochs", "hosts", "regressions", "trend", "diffflame", "me", "values", "paths"}

// FuzzParseRequest feeds a page's URL query string (anything a browser
// may send) to the query parsing, the view parameters' parsers and the
// whole page: a refusal is a badRequest (status 400), never a panic or a
// 500; what parses keeps its filters through the links that carry them
// (filterQuery parses back to the same filters).
func FuzzParseRequest(f *testing.F) {
	for _, q := range []string{
		"host=a,+b&host=c&epoch=&event=cycles&q=main&label=rack=r1",
		"epochs=1-3&image=/bin/sort&pid=7&by=image&limit=10",
		"view=icicle&min=0.5&event=cycles",
		"a=host=alpha0&b=host=alpha1&z=3&by=procedure",
		"proc=main&image=buildid:0123456789abcdef",
		"baseline=2&top=5&z=4&min=10&event=cycles", "baseline=0&top=-1", "z=-3&min=x", "epoch=1&baseline=1", "epochs=1-2&top=1",
		"since=2h&host=alpha0", "from=2026-11-20+08:00&to=09:30", "since=1h&since=2h", "to=a,b", "since=-1h&from=x",
		"top=3&plot=share&measure=procedure=main&measure=image=/bin/b", "measure=host=x", "plot=pie&top=0", "measure=procedure=",
		"a=host=alpha0&b=host=alpha1&min=1", "a=host=alpha0", "a=epoch=1&b=x&min=-1",
		"%zz", "label=rack", "q=a&q=b", "limit=-1", "min=200", "foo=1", ";", "host=%00",
	} {
		f.Add(uint8(0), q)
		f.Add(uint8(3), q)
		f.Add(uint8(6), q) // regressions
		f.Add(uint8(7), q) // trend
		f.Add(uint8(8), q) // diffflame
	}
	all := slices.Concat(slices.Collect(maps.Values(viewParams))...)
	s := New(&testBackend{src: fleet(true), hosts: []string{"alpha0", "alpha1"}}, func(string, ...any) {})
	f.Fuzz(func(t *testing.T, page uint8, raw string) {
		checkParse(t, raw, all...)
		name := fuzzPages[int(page)%len(fuzzPages)]
		checkParse(t, raw, viewParams[name]...)
		path := "/" + name
		if name == "top" {
			path = "/"
		}
		req := httptest.NewRequest("GET", "/", nil)
		req.URL = &url.URL{Path: path, RawQuery: raw}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != http.StatusOK && w.Code != http.StatusBadRequest {
			t.Fatalf("%s?%s: status %d\n%s", path, raw, w.Code, w.Body)
		}
	})
}

func checkParse(t *testing.T, raw string, params ...string) {
	t.Helper()
	r, err := parseRequest(raw, params...)
	if err != nil {
		var bad badRequest
		if !errors.As(err, &bad) {
			t.Fatalf("%q: error %v is not a badRequest", raw, err)
		}
		return
	}
	again, err := parseRequest(r.filterQuery)
	if err != nil {
		t.Fatalf("%q: filters re-encoded as %q do not parse: %v", raw, r.filterQuery, err)
	}
	if !reflect.DeepEqual(again.filters, r.filters) || again.filterQuery != r.filterQuery {
		t.Fatalf("%q: filters %+v re-parse as %+v", raw, r.filters, again.filters)
	}
	for _, name := range params {
		if _, err := r.one(name); err != nil && !errors.As(err, new(badRequest)) {
			t.Fatalf("%q: %s: error %v is not a badRequest", raw, name, err)
		}
		for _, err := range []error{errOf(intParam(r, name, 1, 0)), errOf(floatParam(r, name, 1, 0, 100))} {
			if err != nil && !errors.As(err, new(badRequest)) {
				t.Fatalf("%q: %s: error %v is not a badRequest", raw, name, err)
			}
		}
	}
	if _, _, err := byParam(r); err != nil && !errors.As(err, new(badRequest)) {
		t.Fatalf("%q: by: error %v is not a badRequest", raw, err)
	}
	_ = r.with("proc", "x", "view", "flame")
}

func errOf[T any](_ T, err error) error { return err }
