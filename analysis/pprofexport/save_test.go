package pprofexport

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// TestSave: a file holds the profile and the summary goes to stdout; "-"
// puts the profile on stdout and the summary on stderr; a name that
// cannot be created is an error naming it.
func TestSave(t *testing.T) {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cycles", Unit: "count"}},
		Sample: []*profile.Sample{{Value: []int64{7}}}}
	var stdout, stderr bytes.Buffer
	name := filepath.Join(t.TempDir(), "p.pb.gz")
	to, err := Save(p, name, &stdout, &stderr)
	if err != nil || to != &stdout || stdout.Len() != 0 {
		t.Fatalf("file: summary to %p (stdout %p), %d bytes on stdout, %v", to, &stdout, stdout.Len(), err)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if q, err := profile.ParseData(data); err != nil || q.Sample[0].Value[0] != 7 {
		t.Fatalf("file does not hold the profile: %v", err)
	}
	to, err = Save(p, "-", &stdout, &stderr)
	if err != nil || to != &stderr {
		t.Fatalf("-: summary to %p (stderr %p), %v", to, &stderr, err)
	}
	if q, err := profile.Parse(&stdout); err != nil || q.Sample[0].Value[0] != 7 {
		t.Fatalf("stdout does not hold the profile: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "no", "such", "dir", "p.pb.gz")
	if _, err := Save(p, bad, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("uncreatable file: %v", err)
	}
}
