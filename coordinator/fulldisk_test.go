package coordinator

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/storage"
)

// TestFSMStopsOnAFullDisk: when the profile database cannot write an
// entry (a full disk), the FSM returns an error wrapping
// storage.ErrWriteFailed, tells the replica once (OnStoreError), and
// applies no later entry: had it gone on, its applied index would pass
// the lost entry and the replica would hold less than the others for
// good. Its log index stays before the entry, so a restart replays it.
// Skipped without a tmpfs to fill (root, mount rights).
func TestFSMStopsOnAFullDisk(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("no tmpfs to fill (mount: %v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	f, err := OpenFSM(filepath.Join(mnt, "db"), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	var heard []error
	f.OnStoreError(func(err error) { heard = append(heard, err) })
	mustApply(t, f, 1, &StartEpochs{At: t0})
	if err := os.WriteFile(filepath.Join(mnt, "ballast"), make([]byte, 18<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newStreams(testRand(t))
	var failedAt uint64
	for index := uint64(2); index < 10_000; index++ {
		b, err := EncodeCommand(&Ingest{Deltas: s.deltas(4, 400, 1, "alpha", "beta")})
		if err != nil {
			t.Fatal(err)
		}
		if res, ok := f.ApplyCommand(index, b).(error); ok {
			if !errors.Is(res, storage.ErrWriteFailed) {
				t.Fatalf("entry %d: %v, want a write failure", index, res)
			}
			failedAt = index
			break
		}
	}
	if failedAt == 0 {
		t.Fatal("the disk never filled")
	}
	if len(heard) != 1 || !errors.Is(heard[0], storage.ErrWriteFailed) {
		t.Fatalf("OnStoreError heard %v, want the failure once", heard)
	}
	// The next entry, of another kind, is refused with the same error.
	b, _ := EncodeCommand(&CutEpoch{At: t0.Add(1)})
	if res, ok := f.ApplyCommand(failedAt+1, b).(error); !ok || !errors.Is(res, storage.ErrWriteFailed) {
		t.Fatalf("entry %d after the failure: %v, want the failure again", failedAt+1, res)
	}
	if got := f.AppliedIndex(); got >= failedAt {
		t.Fatalf("applied index %d, want below the failed entry %d so a restart replays it", got, failedAt)
	}
	if err := f.StoreFailed(); !errors.Is(err, storage.ErrWriteFailed) || len(heard) != 1 {
		t.Fatalf("StoreFailed %v, heard %d times", err, len(heard))
	}
	t.Logf("entry %d failed, nothing applied after it: %v", failedAt, heard[0])
}
