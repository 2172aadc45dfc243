package simhost

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadGroundTruthFileErrors: a missing file and one that is not a
// ground truth file are refused, the second by name (dcpi calc --truth's
// errors).
func TestReadGroundTruthFileErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadGroundTruthFile(filepath.Join(dir, "nowhere")); err == nil || !strings.HasPrefix(err.Error(), "--truth: open ") {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("not a truth file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadGroundTruthFile(bad); err == nil || !strings.HasPrefix(err.Error(), "--truth "+bad+": ") {
		t.Errorf("bad file: %v", err)
	}
}
