package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/wire"
)

// profileSum is the database's totals and the sum and count of its
// profile rows, or what went wrong reading them.
type profileSum struct {
	samples, unknown, dropped, rows, sum uint64
}

var errPanicked = errors.New("panicked")

func readSum(dir string) (s profileSum, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errPanicked, p)
		}
	}()
	db, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		return s, err
	}
	defer db.Close()
	var drops map[string]uint64
	s.samples, s.unknown, drops, err = db.Totals(Query{})
	if err != nil {
		return s, err
	}
	for _, n := range drops {
		s.dropped += n
	}
	err = db.Profile(context.Background(), Query{}, func(_ wire.ImageKey, _ uint64, _ uint8, _ string, count uint64) error {
		s.rows++
		s.sum += count
		return nil
	})
	return s, err
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestBitFlipsAreErrors flips one bit at a time at offsets spread over
// every file of a closed database, and reads the copy's totals and
// profile: each read either fails with an error or returns exactly the
// undamaged database's figures (the bit was in a part the reads do not
// use, or that Pebble does not read). Never a panic, Pebble's Fatalf
// (which ended the process) or other figures: before Close flushed, a
// damaged newest log read as a torn write and opened with smaller
// counts, and a damaged table ended the process.
func TestBitFlipsAreErrors(t *testing.T) {
	dir := closedTestDB(t)
	want, err := readSum(dir)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	const flips = 24 // per file
	var errorsSeen int
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		for i := range int64(flips) {
			if info.Size() == 0 {
				break
			}
			off := i * info.Size() / flips
			cp := filepath.Join(t.TempDir(), "db")
			copyDir(t, dir, cp)
			flipBit(t, filepath.Join(cp, e.Name()), off)
			got, err := readSum(cp)
			switch {
			case errors.Is(err, errPanicked):
				t.Errorf("%s, bit flipped at %d: %v", e.Name(), off, err)
			case err != nil:
				errorsSeen++
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("%s, bit flipped at %d: the error is not one line: %q", e.Name(), off, err)
				}
			case got != want:
				t.Errorf("%s, bit flipped at %d: read %+v without an error, want %+v", e.Name(), off, got, want)
			}
		}
	}
	if errorsSeen == 0 {
		t.Error("no flipped bit gave an error: the sweep read nothing that mattered")
	}
}

// closedTestDB is a database of 40 batches of one stream, closed.
func closedTestDB(t *testing.T) string {
	t.Helper()
	db, dir := openTest(t)
	r := testRand(t)
	for seq := uint64(1); seq <= 40; seq++ {
		if _, err := db.ApplyBatch(streamBatch(r, "h1", 0, seq, 200)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// flipBit flips one bit of the byte at off in file.
func flipBit(t *testing.T, file string, off int64) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x08
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedDatabaseSaysSo: once a read finds a damaged table, the read
// fails with one line naming the database and wrapping ErrCorrupt, and
// the database says so after (Damaged, Usable: a replica's readiness),
// so a server stops answering from what is left.
func TestDamagedDatabaseSaysSo(t *testing.T) {
	dir := closedTestDB(t)
	tables, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil || len(tables) == 0 {
		t.Fatalf("no table after Close: %v %v", tables, err)
	}
	info, err := os.Stat(tables[0])
	if err != nil {
		t.Fatal(err)
	}
	for off := int64(0); off < info.Size(); off += info.Size() / 32 {
		cp := filepath.Join(t.TempDir(), "db")
		copyDir(t, dir, cp)
		flipBit(t, filepath.Join(cp, filepath.Base(tables[0])), off)
		d, err := Open(cp, Options{ReadOnly: true})
		if err != nil {
			continue
		}
		_, _, _, err = d.Totals(Query{})
		if err == nil {
			err = d.Profile(t.Context(), Query{}, func(wire.ImageKey, uint64, uint8, string, uint64) error { return nil })
		}
		if !errors.Is(err, ErrCorrupt) {
			d.Close()
			continue
		}
		if !strings.Contains(err.Error(), cp+" is damaged: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("the read's error %q: want one line naming %s", err, cp)
		}
		if d.Damaged() == nil || d.Usable() == nil {
			t.Errorf("after a damaged read: Damaged %v, Usable %v; want both to say so", d.Damaged(), d.Usable())
		}
		d.Close()
		return
	}
	t.Fatal("no flipped bit in the table made a read fail")
}
