package pathupload

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/analysis/oracle"
	"dcpi/hwsim"
	"dcpi/storage"
	"dcpi/workloads"
)

// saveTinyOracle runs tiny under the oracle and returns its save file.
func saveTinyOracle(t *testing.T) string {
	t.Helper()
	data, err := workloads.Binary("tiny")
	if err != nil {
		t.Fatal(err)
	}
	hc := hwsim.DefaultConfig()
	hc.CPUs = 1
	hc.Files = map[string][]byte{"/bin/tiny": data}
	hc.Stdout, hc.Stderr = io.Discard, io.Discard
	save := filepath.Join(t.TempDir(), "tiny.json")
	if _, err := oracle.RunReport(oracle.Options{Machine: hc, Path: "/bin/tiny", Args: []string{"tiny"}, Top: 1, Save: save}); err != nil {
		t.Fatal(err)
	}
	return save
}

// TestUploadFilesOnce: a file uploaded twice to a local database is
// applied once (its kept IDs make the second a duplicate), labelled as
// oracle data; a directory is refused, and a done context sends nothing.
func TestUploadFilesOnce(t *testing.T) {
	save := saveTinyOracle(t)
	db, err := storage.Open(filepath.Join(t.TempDir(), "db"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	opt := Options{Files: []string{save}, Host: "alpha0", Send: LocalSender(db)}
	for _, want := range []string{": applied\n", ": duplicate\n"} {
		var out strings.Builder
		if err := UploadFiles(context.Background(), &out, opt); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), save+" ") || !strings.HasSuffix(out.String(), want) || !strings.Contains(out.String(), " oracle as alpha0/") {
			t.Errorf("upload: %q, want it to end %q", out.String(), want)
		}
	}
	dir := Options{Files: []string{t.TempDir()}, Host: "alpha0", Send: LocalSender(db)}
	if err := UploadFiles(context.Background(), io.Discard, dir); err == nil {
		t.Error("a directory was uploaded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out strings.Builder
	if err := UploadFiles(ctx, &out, opt); !errors.Is(err, context.Canceled) || out.Len() > 0 {
		t.Errorf("a done context: %v, wrote %q", err, out.String())
	}
}
