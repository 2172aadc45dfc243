package instrument

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestUserProgram builds testdata/user.c with the Alpha cross compiler
// (skipped without it), instruments it, and runs both on hwsim and, when
// installed, on qemu-alpha: the output must be the original's on each, the
// dump must hold the parent's and the child's records, and the counts of
// the program's own code must agree between the two emulators.
func TestUserProgram(t *testing.T) {
	dir := t.TempDir()
	orig := buildUserProgram(t, dir)
	res, err := Instrument(orig, "user", Options{Mode: ModePixie, DumpPath: "pp.out"})
	if err != nil {
		t.Fatal(err)
	}
	want, wantErr, _, _, _ := simRun(t, "user", orig, nil)
	got, gotErr, _, _, files := simRun(t, "user", res.ELF, nil)
	if !bytes.Equal(got, want) || !bytes.Equal(gotErr, wantErr) || !bytes.Contains(got, []byte("s=428300 v=42 child=3")) {
		t.Fatalf("on hwsim: got %q / %q, want %q / %q", got, gotErr, want, wantErr)
	}
	onSim, err := ReadCounts(res.ELF, files["pp.out"].Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if onSim.Records != 2 {
		t.Errorf("%d records on hwsim, want the parent's and the child's", onSim.Records)
	}
	qemu, err := exec.LookPath("qemu-alpha")
	if err != nil {
		t.Skip("qemu-alpha not installed")
	}
	ipath := filepath.Join(dir, "user.pix")
	if err := os.WriteFile(ipath, res.ELF, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(qemu, "-cpu", "ev5", ipath)
	cmd.Dir, cmd.Env = dir, []string{"PATH=/bin"}
	qout, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(qout, want) {
		t.Fatalf("on qemu-alpha: got %q, want %q", qout, want)
	}
	dump, err := os.ReadFile(filepath.Join(dir, "pp.out"))
	if err != nil {
		t.Fatal(err)
	}
	onQemu, err := ReadCounts(res.ELF, dump)
	if err != nil {
		t.Fatal(err)
	}
	own := ownCode(t, orig)
	var same int
	for pc, n := range onSim.Blocks {
		if !own(pc) {
			continue
		}
		if onQemu.Blocks[pc] != n {
			t.Errorf("block %#x: %d on hwsim, %d on qemu-alpha", pc, n, onQemu.Blocks[pc])
		} else if n > 0 {
			same++
		}
	}
	if same < 20 {
		t.Errorf("only %d executed blocks of the program agree", same)
	}
}
