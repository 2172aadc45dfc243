package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"dcpi/cluster"
	"dcpi/coordinator"
	"dcpi/internal/slogf"
	"dcpi/transport"
)

// hotPathCount is the count column of procedure proc's path id in pp
// fleet's hot paths.
func hotPathCount(t *testing.T, out, proc, id string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  ` + proc + `\s+` + id + `\s+(\d+)\s`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no path %s of %s in:\n%s", id, proc, out)
	}
	return m[1]
}

// TestPPUploadFleetLocal: tiny's ground truth uploaded as two hosts, one of
// them twice, to a local database; pp fleet shows every path count
// doubled exactly, one host's alone with --host, and the oracle label.
func TestPPUploadFleetLocal(t *testing.T) {
	dir := t.TempDir()
	save, save2, db := filepath.Join(dir, "tiny.json"), filepath.Join(dir, "tiny2.json"), filepath.Join(dir, "db")
	if _, _, err := run(t, "pp", "oracle", "--save", save, "--", "tiny"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(save)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(save2, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct{ host, file, want string }{
		{"alpha0", save, ": applied\n"}, {"alpha0", save, ": duplicate\n"}, {"alpha1", save2, ": applied\n"},
	} {
		out, _, err := run(t, "pp", "upload", "--db", db, "--host", c.host, c.file)
		if err != nil || !strings.HasSuffix(out, c.want) || !strings.Contains(out, " oracle as "+c.host+"/") {
			t.Fatalf("upload %d: %v\n%s", i, err, out)
		}
	}
	one, _, err := run(t, "pp", "fleet", "--db", db, "--host", "alpha1")
	if err != nil {
		t.Fatal(err)
	}
	all, _, err := run(t, "pp", "fleet", "--db", db, "--image", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# hwsim ground truth (dcpi pp oracle), merged over hosts: not an instrumented profile", "source oracle (hwsim-oracle), hosts alpha0, alpha1", "top contexts (by own instructions)", "> tiny_main"} {
		if !strings.Contains(all, want) {
			t.Errorf("output lacks %q:\n%s", want, all)
		}
	}
	// The web's paths page shows what dcpi pp fleet prints.
	if page := webReport(t, db, "/paths?in=tiny"); page != all {
		t.Errorf("the web's /paths shows\n%s\ndcpi pp fleet prints\n%s", page, all)
	}
	if !strings.Contains(one, "hosts alpha1\n") {
		t.Errorf("--host alpha1 lists other hosts:\n%s", one)
	}
	for _, id := range []string{"5", "7", "2", "4"} {
		n1, n2 := hotPathCount(t, one, "tiny_main", id), hotPathCount(t, all, "tiny_main", id)
		if atoi(t, n2) != 2*atoi(t, n1) {
			t.Errorf("path %s: one host %s, both %s (want twice)", id, n1, n2)
		}
	}
	if _, _, err := run(t, "pp", "fleet", "--db", db, "--source", "instrumented"); err == nil || !strings.Contains(err.Error(), "no path profile matches; uploaded: oracle /bin/tiny") {
		t.Errorf("--source instrumented: %v", err)
	}
	if _, _, err := run(t, "pp", "upload", "--db", db, "--host", "a.b", save); err == nil {
		t.Error("a host with a dot was accepted")
	}
	if _, _, err := run(t, "pp", "upload", "--db", db, "--host", "a", db); err == nil {
		t.Error("a directory was uploaded")
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"format":"other"}`), 0o644)
	if _, _, err := run(t, "pp", "upload", "--db", db, "--host", "a", bad); err == nil || !strings.Contains(err.Error(), "not a path profile file") {
		t.Errorf("unknown format: %v", err)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = 10*n + int(c-'0')
	}
	return n
}

// TestPPUploadFleetCluster: the same through a cluster: pp upload --nats
// publishes, the aggregators' path consumer applies, pp fleet --nats reads.
func TestPPUploadFleetCluster(t *testing.T) {
	url, _ := startTestCluster(t)
	nc, err := transport.Connect(transport.ConnConfig{URLs: []string{url}, Name: "paths"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); cluster.RunPathUploads(ctx, js, coordinator.NewClient(nc), slogf.Test(t)) }()
	defer func() { cancel(); <-done }()
	save := filepath.Join(t.TempDir(), "tiny.json")
	if _, _, err := run(t, "pp", "oracle", "--save", save, "--", "tiny"); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second is the same upload again
		if out, _, err := run(t, "pp", "upload", "--nats", url, "--host", "alpha0", save); err != nil || !strings.Contains(out, "published") {
			t.Fatalf("upload: %v\n%s", err, out)
		}
	}
	var out string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, _, err = run(t, "pp", "fleet", "--nats", url)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pp fleet: %v", err)
		}
	}
	local := filepath.Join(t.TempDir(), "db")
	if _, _, err := run(t, "pp", "upload", "--db", local, "--host", "alpha0", save); err != nil {
		t.Fatal(err)
	}
	want, _, err := run(t, "pp", "fleet", "--db", local)
	if err != nil {
		t.Fatal(err)
	}
	if out != want {
		t.Errorf("the cluster's merge differs from one upload's:\n%s\nwant\n%s", out, want)
	}
}
