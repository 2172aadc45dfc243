package simhost

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/elfimage"
	"dcpi/hwsim/vmunix"
	"dcpi/node"
	"dcpi/wire"
	"dcpi/workloads"
)

// TestDynamicImages profiles the dynamically linked strproc (qsort,
// strcmp, memcpy: much of its time is in libc) on both timing models: the
// loader's map events make ld.so, libc and libm images of their own, whose
// records carry the file's size and symbols (with its unnamed procedures,
// from .eh_frame) and Base 0 (the image's own
// address, so offsets are the library's addresses wherever it was
// loaded); samples land in libc on procedures its symbol table names, and
// the unknown profile stays under 1%.
func TestDynamicImages(t *testing.T) {
	skipUnderRace(t)
	if _, err := os.Stat(filepath.Join(hwsim.DefaultSysroot, "lib", "libc.so.6.1")); err != nil {
		t.Skipf("no Alpha sysroot: %v", err)
	}
	bin, err := workloads.DynamicBinary("strproc")
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []alpha.Model{alpha.EV5, alpha.EV6} {
		t.Run(model.Name, func(t *testing.T) {
			cfg := hwsim.DefaultConfig()
			cfg.CPUs, cfg.Model = 1, model
			cfg.Files = map[string][]byte{"/bin/strproc": bin}
			m, err := hwsim.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ncfg := DefaultConfig()
			ncfg.Profile = shortPeriods()
			pub := &node.MemPublisher{}
			h, err := New(m, ncfg, pub)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Spawn("/bin/strproc", []string{"/bin/strproc", "200"}, nil); err != nil {
				t.Fatal(err)
			}
			if err := h.Run(0); err != nil {
				t.Fatal(err)
			}
			recs := map[string]bool{}
			var libc *elfimage.Image
			var libcSyms []wire.Symbol
			for _, r := range pub.Images() {
				recs[path.Base(r.Path)] = true
				if r.Path == vmunix.Path || r.Path == "/bin/strproc" {
					continue
				}
				data, _, err := hwsim.Sysroot{Dir: hwsim.DefaultSysroot}.ReadFile(r.Path)
				if err != nil {
					t.Fatalf("record of %s: %v", r.Path, err)
				}
				if r.Base != 0 || r.Size != uint64(len(data)) || len(r.Symbols) == 0 {
					t.Errorf("%s: base %#x, size %d (file %d), %d symbols", r.Path, r.Base, r.Size, len(data), len(r.Symbols))
				}
				if path.Base(r.Path) == "libc.so.6.1" {
					if libc, err = elfimage.ParseObject(data, r.Path); err != nil {
						t.Fatal(err)
					}
					libcSyms = r.Symbols
					if r.Key.String() != libc.ID.String() {
						t.Errorf("libc record key %v, file %v", r.Key, libc.ID)
					}
				}
			}
			for _, want := range []string{"strproc", "ld-linux.so.2", "libc.so.6.1"} {
				if !recs[want] {
					t.Errorf("no image record of %s (have %v)", want, recs)
				}
			}
			if libc == nil {
				t.FailNow()
			}
			var total, unknown, inLibc, named uint64
			for _, b := range pub.Batches() {
				for _, u := range b.Unknown {
					unknown += u.Count
					total += u.Count
				}
				for _, e := range b.Entries {
					total += e.Count
					if e.Image.String() != libc.ID.String() {
						continue
					}
					inLibc += e.Count
					if slices.ContainsFunc(libcSyms, func(s wire.Symbol) bool { return e.Offset-s.Addr < max(s.Size, 1) }) {
						named += e.Count
					}
				}
			}
			t.Logf("%d samples: %d in libc (%d on a named procedure), %d unknown; by image %+v",
				total, inLibc, named, unknown, h.Node().ImageFigures())
			// Procedures .dynsym does not name are named from .eh_frame
			// (elfimage.ProcedureSymbols): nearly every libc sample is on one.
			if total == 0 || inLibc < total/10 || named < inLibc*95/100 {
				t.Errorf("%d samples, %d in libc, %d on the record's procedures: want libc's share, nearly all named", total, inLibc, named)
			}
			if unknown*100 >= total {
				t.Errorf("%d of %d samples unknown, want under 1%%", unknown, total)
			}
		})
	}
}
