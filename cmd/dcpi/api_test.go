package main

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"testing"

	"dcpi/analysis/report"
	"dcpi/analysis/web"
	"dcpi/profiledb"
	"dcpi/profiledb/webdb"
	"dcpi/storage"
)

// apiGet is the web server's answer to path (a page or the API) over the
// local database at dir.
func apiGet(t *testing.T, dir, path string) (int, []byte) {
	t.Helper()
	sdb, err := storage.Open(dir, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	s := web.New(webdb.New(profiledb.NewLocal(sdb), nil, nil), t.Logf)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	body, _ := io.ReadAll(w.Result().Body)
	return w.Code, body
}

// TestAPIAnswersAsTheCLI: every query kind of the HTTP API answers with
// exactly what the command prints with --json, over one database of two
// hosts with call stacks; the epochs are the ones epoch list names.
func TestAPIAnswersAsTheCLI(t *testing.T) {
	db := filepath.Join(t.TempDir(), "db")
	if _, stderr, err := run(t, "profile", "-o", db, "--seconds", "0.05", "--stacks", "--hosts", "2", "--", "sort", ":", "stream"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var prof report.ProfTable
	toolJSON(t, &prof, "prof", "--db", db, "--json")
	if len(prof.Rows) == 0 {
		t.Fatal("an empty profile")
	}
	hot := prof.Rows[0].Procedure
	for _, c := range []struct {
		path string
		cli  []string
	}{
		{"/api/v1/prof", []string{"prof", "--db", db, "--json"}},
		{"/api/v1/prof?by=image&limit=2&host=alpha1", []string{"prof", "--db", db, "--json", "--by", "image", "--limit", "2", "--host", "alpha1"}},
		{"/api/v1/prof?by=host", []string{"prof", "--db", db, "--json", "--by", "host"}},
		{"/api/v1/list?proc=" + hot, []string{"list", "--db", db, "--json", hot}},
		{"/api/v1/stacks", []string{"stacks", "--db", db, "--json"}},
		{"/api/v1/stacks?order=bottom-up&host=alpha0", []string{"stacks", "--db", db, "--json", "--bottom-up", "--host", "alpha0"}},
		{"/api/v1/trend?epoch=1", []string{"trend", "--db", db, "--json", "--epoch", "1"}},
		{"/api/v1/diff?a=host=alpha0&b=host=alpha1", []string{"diff", "--db", db, "--json", "--a", "host=alpha0", "--b", "host=alpha1"}},
	} {
		code, body := apiGet(t, db, c.path)
		out, stderr, err := run(t, c.cli...)
		if err != nil {
			t.Fatalf("dcpi %v: %v\n%s", c.cli, err, stderr)
		}
		var api, cli any
		if code != 200 || json.Unmarshal(body, &api) != nil || json.Unmarshal([]byte(out), &cli) != nil || !reflect.DeepEqual(api, cli) {
			t.Errorf("%s: %d\n%s\ndcpi %v prints\n%s", c.path, code, body, c.cli, out)
		}
	}
	// Epochs: a local database records none, as epoch list says.
	code, body := apiGet(t, db, "/api/v1/epochs")
	var eps []web.Epoch
	if err := json.Unmarshal(body, &eps); code != 200 || err != nil || len(eps) != 0 {
		t.Fatalf("/api/v1/epochs: %d %v\n%s", code, err, body)
	}
	// Bad input: a 400 with the tool's message.
	if code, body := apiGet(t, db, "/api/v1/prof?host=nope"); code != 200 {
		t.Errorf("a host with no samples: %d %s", code, body)
	}
	if code, body := apiGet(t, db, "/api/v1/list?proc=no_such_procedure"); code != 400 {
		t.Errorf("an unknown procedure: %d %s", code, body)
	}
}
