package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/analysis"
	"dcpi/analysis/symbolize"
	"dcpi/hwsim/vmunix"
	"dcpi/storage"
	"dcpi/workloads"
)

// workloadSource reads the workloads' sources as --source-dir ../workloads
// does: the line tables name them relative to the workloads directory
// (src/sort.c; the Makefile maps the build directory to ".").
func workloadSource(file string) ([]byte, error) {
	return os.ReadFile(filepath.Join("..", "..", "workloads", file))
}

func TestListGolden(t *testing.T) {
	src, _ := sortSource(t)
	for _, tc := range []struct {
		file string
		q    ListQuery
		json bool
	}{
		{"list_insertion.txt", ListQuery{Procedures: []string{"insertion"}, Source: workloadSource}, false},
		{"list_insertion_nosource.txt", ListQuery{Procedures: []string{"insertion"}, Events: []uint8{evCycles, evIMiss},
			Filter: storage.Query{Hosts: []string{"alpha"}}}, false},
		{"list_insertion.json", ListQuery{Procedures: []string{"insertion"}, Events: []uint8{evIMiss}, Source: workloadSource}, true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			tc.q.Files = embeddedFinder{}
			l, err := List(t.Context(), src, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if tc.json {
				err = l.WriteJSON(&buf)
			} else {
				err = l.WriteText(&buf)
			}
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.file, buf.Bytes())
		})
	}
}

// TestListSamplesAndSource checks the listing against the profile: every
// sample in the procedure lands on its instruction, the totals add up, and
// each source line comes before the instructions compiled from it, with
// its text from the file.
func TestListSamplesAndSource(t *testing.T) {
	src, _ := sortSource(t)
	l, err := List(t.Context(), src, ListQuery{Procedures: []string{"insertion", "quick"}, Files: embeddedFinder{}, Source: workloadSource})
	if err != nil {
		t.Fatal(err)
	}
	// In Prof's order: insertion has more samples.
	if len(l.Procedures) != 2 || l.Procedures[0].Procedure != "insertion" || l.Procedures[1].Procedure != "quick" {
		t.Fatalf("procedures %+v", l.Procedures)
	}
	ins := l.Procedures[0]
	if ins.Counts[0] != 77+85 || !ins.HasLines {
		t.Errorf("insertion: counts %v has lines %v", ins.Counts, ins.HasLines)
	}
	var sum uint64
	sawSource := false
	text, _ := os.ReadFile("../../workloads/src/sort.c")
	lines := strings.Split(string(text), "\n")
	for i, ln := range ins.Lines {
		if ln.File != "" {
			if ln.File != "src/sort.c" || ln.Line < 15 || ln.Line > 27 || ln.Text != expandTabs(lines[ln.Line-1]) {
				t.Errorf("source line %+v", ln)
			}
			if i+1 >= len(ins.Lines) || ins.Lines[i+1].File != "" {
				t.Errorf("source line %d not followed by an instruction", i)
			}
			sawSource = true
			continue
		}
		sum += ln.Counts[0]
		if ln.Addr < ins.Start || ln.Addr >= ins.End || ln.Insn == "" {
			t.Errorf("instruction %+v", ln)
		}
	}
	if sum != ins.Counts[0] || !sawSource {
		t.Errorf("instructions sum to %d, procedure %d; source lines %v", sum, ins.Counts[0], sawSource)
	}
	if ins.Lines[0].File == "" {
		t.Errorf("listing does not open with a source line")
	}
	// Source files that cannot be found give file:line without text.
	l, err = List(t.Context(), src, ListQuery{Procedures: []string{"insertion"}, Files: embeddedFinder{},
		Source: func(string) ([]byte, error) { return nil, os.ErrNotExist }})
	if err != nil {
		t.Fatal(err)
	}
	for _, ln := range l.Procedures[0].Lines {
		if ln.File != "" && ln.Text != "" {
			t.Errorf("text %q without a source file", ln.Text)
		}
	}
}

func TestListErrors(t *testing.T) {
	src, _ := sortSource(t)
	other, _ := workloads.Binary("hashdb")
	for _, tc := range []struct {
		name string
		q    ListQuery
		is   error
		want string
	}{
		{"no procedure", ListQuery{Files: embeddedFinder{}}, analysis.ErrQuery, "no procedure"},
		{"no samples", ListQuery{Procedures: []string{"heap"}, Files: embeddedFinder{}}, analysis.ErrQuery, "no samples in procedure heap"},
		{"unknown", ListQuery{Procedures: []string{symbolize.UnknownProcedure}, Files: embeddedFinder{}}, analysis.ErrQuery, "no instructions"},
		{"other build", ListQuery{Procedures: []string{"insertion"}, Files: bytesFinder(other)}, symbolize.ErrImageMismatch, "the profile's is"},
		{"not ELF", ListQuery{Procedures: []string{"insertion"}, Files: bytesFinder("junk")}, nil, "test bytes"},
		{"not found", ListQuery{Procedures: []string{"insertion"}, Files: findNothing{}}, symbolize.ErrNoImageFile, "insertion in /bin/sort"},
	} {
		_, err := List(t.Context(), src, tc.q)
		if err == nil || tc.is != nil && !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %v containing %q", tc.name, err, tc.is, tc.want)
		}
	}
}

// TestListKernel lists a vmunix procedure: the kernel's segments lie above
// user space, and its line table names its sources.
func TestListKernel(t *testing.T) {
	r, im := elfRecord(t, vmunix.Image(), vmunix.Path, true)
	m := analysis.NewMemSource()
	m.PutImage(r)
	s := im.Symbols[len(im.Symbols)/2]
	m.Add(storage.Record{Epoch: 1, Event: evCycles, Image: r.Key, Offset: s.Addr - r.Base, Host: "h", Count: 3})
	l, err := List(t.Context(), m, ListQuery{Procedures: []string{s.Name}, Files: embeddedFinder{}})
	if err != nil {
		t.Fatal(err)
	}
	p := l.Procedures[0]
	if p.Counts[0] != 3 || !p.HasLines || len(p.Lines) < 2 {
		t.Fatalf("%+v", p)
	}
	js, _ := json.Marshal(l)
	if !bytes.Contains(js, []byte(`"file":"embedded /vmunix"`)) {
		t.Errorf("JSON %s", js)
	}
}

// TestListWithoutLineInfo lists from a copy of /bin/sort whose .debug_line
// section is renamed away (its build ID, and so its key, unchanged): no
// source lines, and the text says so.
func TestListWithoutLineInfo(t *testing.T) {
	src, _ := sortSource(t)
	data, _ := workloads.Binary("sort")
	data = bytes.Clone(data)
	i := bytes.Index(data, []byte(".debug_line\x00"))
	if i < 0 {
		t.Fatal("no .debug_line name in sort")
	}
	data[i+1] = 'x'
	l, err := List(t.Context(), src, ListQuery{Procedures: []string{"insertion"}, Files: bytesFinder(data), Source: workloadSource})
	if err != nil {
		t.Fatal(err)
	}
	p := l.Procedures[0]
	if p.HasLines || p.Counts[0] != 162 {
		t.Errorf("has lines %v, counts %v", p.HasLines, p.Counts)
	}
	for _, ln := range p.Lines {
		if ln.File != "" {
			t.Fatalf("source line %+v", ln)
		}
	}
	var buf bytes.Buffer
	l.WriteText(&buf)
	if !strings.Contains(buf.String(), "no DWARF line information") {
		t.Errorf("listing:\n%s", buf.String())
	}
}
