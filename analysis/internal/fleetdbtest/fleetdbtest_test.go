package fleetdbtest

import (
	"os"
	"path/filepath"
	"testing"

	"dcpi/storage"
	"dcpi/wire"
)

func TestBuildCoversEveryOffset(t *testing.T) {
	s := Spec{Hosts: 4, Images: 2, Offsets: 40, PerHost: 10, ProcSize: 5, Events: []uint8{0, 2}, Seed: 3}
	root := t.TempDir()
	db, built, err := Open(root, s)
	if err != nil || built == nil || built.Counts != s.Counts() {
		t.Fatalf("Open: %v %+v", err, built)
	}
	type key struct {
		image  wire.ImageKey
		offset uint64
		event  uint8
	}
	fleet := map[key]uint64{}
	err = db.Profile(t.Context(), storage.Query{}, func(im wire.ImageKey, off uint64, ev uint8, _ string, n uint64) error {
		fleet[key{im, off, ev}] = n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(fleet) != s.Images*s.Offsets*len(s.Events) {
		t.Errorf("roll-up holds %d (image, offset, event)s, want all %d", len(fleet), s.Images*s.Offsets*len(s.Events))
	}
	perHost := 0
	err = db.Records(storage.Query{Hosts: []string{Host(1)}}, func(storage.Record) error { perHost++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if perHost != s.Images*s.PerHost*len(s.Events) {
		t.Errorf("host 1 has %d counts, want %d", perHost, s.Images*s.PerHost*len(s.Events))
	}
	r, err := db.Image(t.Context(), Image(1))
	if err != nil || len(r.Symbols) != s.Offsets/s.ProcSize {
		t.Fatalf("image record %+v, %v", r, err)
	}
	db.Close()
	// Cached: the second Open does not build.
	db, built, err = Open(root, s)
	if err != nil || built != nil {
		t.Fatalf("second Open: %v, built %+v", err, built)
	}
	db.Close()
	// Built by another storage schema: rebuilt.
	if err := os.WriteFile(filepath.Join(root, s.Name(), "complete"), []byte("schema dcpi-profile-db/0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db, built, err = Open(root, s)
	if err != nil || built == nil {
		t.Fatalf("Open over another schema's build: %v, built %+v", err, built)
	}
	db.Close()
	if _, err := Build(filepath.Join(root, "bad"), Spec{}, 1); err == nil {
		t.Error("Build of a zero Spec succeeded")
	}
}
