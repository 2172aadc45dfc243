package pathupload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/wire"
)

// TestUploadIDsKept: an image's ID is chosen once, kept beside the file,
// and read back the same, so a second upload of the file sends the same
// IDs; a damaged ID file is refused with its line, not replaced.
func TestUploadIDsKept(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.json")
	key, err := wire.ParseImageKey("sha256:" + strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := loadUploadIDs(file)
	if err != nil {
		t.Fatal(err)
	}
	id, fresh, err := ids.get(key)
	if err != nil || !fresh || id.IsZero() {
		t.Fatalf("first get: %v %v %v", id, fresh, err)
	}
	if again, fresh, _ := ids.get(key); again != id || fresh {
		t.Fatalf("second get: %v fresh %v, want %v kept", again, fresh, id)
	}
	if err := ids.save(); err != nil {
		t.Fatal(err)
	}
	back, err := loadUploadIDs(file)
	if err != nil {
		t.Fatal(err)
	}
	if got, fresh, _ := back.get(key); got != id || fresh {
		t.Fatalf("reloaded: %v fresh %v, want %v", got, fresh, id)
	}
	if err := os.WriteFile(file+".upload-ids", []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadUploadIDs(file); err == nil || !strings.Contains(err.Error(), ".upload-ids:1:") {
		t.Errorf("a damaged ID file: %v, want an error naming its line", err)
	}
}

// TestReadFileNamesTheFormats: a file of no known format is refused,
// naming the formats this build reads.
func TestReadFileNamesTheFormats(t *testing.T) {
	file := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(file)
	if err == nil || !strings.Contains(err.Error(), "dcpi pp oracle --save") || !strings.Contains(err.Error(), "dcpi pp counts --save") {
		t.Errorf("%v", err)
	}
}
