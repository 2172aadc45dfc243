package paths

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func sampleProfile() *Profile {
	return &Profile{Source: "test", Metrics: []string{"instructions", "cycles"}, Images: []ImageProfile{
		{ID: "buildid:bb", Path: "/bin/b", Procs: []ProcProfile{
			{Entry: 0x2000, Name: "g", NumPaths: 4, Paths: []PathCount{{ID: 3, Count: 1, Metrics: []uint64{9, 20}}, {ID: 0, Count: 7, Metrics: []uint64{70, 140}}}},
			{Entry: 0x1000, Name: "f", NumPaths: 0, Unknown: 5},
		}},
		{ID: "buildid:aa", Path: "/bin/a", Procs: []ProcProfile{{Entry: 0x10, Name: "main", NumPaths: 1, Paths: []PathCount{{ID: 0, Count: 1, Metrics: []uint64{3, 4}}}}}},
	}}
}

// TestProfileRoundTrip: encoding is canonical (input order does not
// matter), decodes to the same profile and re-encodes to the same bytes.
func TestProfileRoundTrip(t *testing.T) {
	var a bytes.Buffer
	if err := sampleProfile().Encode(&a); err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"source":"test","metrics":["instructions","cycles"],"images":[{"id":"buildid:aa","path":"/bin/a","procs":[{"entry":16,"name":"main","num_paths":1,"paths":[{"id":0,"count":1,"metrics":[3,4]}]}]},{"id":"buildid:bb","path":"/bin/b","procs":[{"entry":4096,"name":"f","num_paths":0,"unknown":5,"paths":[]},{"entry":8192,"name":"g","num_paths":4,"paths":[{"id":0,"count":7,"metrics":[70,140]},{"id":3,"count":1,"metrics":[9,20]}]}]}]}` + "\n"
	if a.String() != want {
		t.Fatalf("encoding:\n%s\nwant\n%s", a.String(), want)
	}
	p, err := DecodeProfile(a.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := p.Encode(&b); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Fatalf("re-encoding differs:\n%s\n%s", a.String(), b.String())
	}
}

func TestProfileDecodeRefuses(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleProfile().Encode(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.String()
	for name, in := range map[string]string{
		"empty":         ``,
		"version":       strings.Replace(good, `"version":1`, `"version":2`, 1),
		"unknown field": strings.Replace(good, `"source"`, `"x":1,"source"`, 1),
		"trailing":      good + `{}`,
		"no source":     strings.Replace(good, `"source":"test"`, `"source":""`, 1),
		"repeat metric": strings.Replace(good, `["instructions","cycles"]`, `["cycles","cycles"]`, 1),
		"image order":   strings.Replace(good, `buildid:aa`, `buildid:cc`, 1),
		"no image id":   strings.Replace(good, `"id":"buildid:aa"`, `"id":""`, 1),
		"proc order":    strings.Replace(good, `"entry":4096`, `"entry":9000`, 1),
		"path range":    strings.Replace(good, `"id":3,`, `"id":4,`, 1),
		"path order":    strings.Replace(good, `"id":0,"count":7`, `"id":5,"count":7`, 1),
		"zero count":    strings.Replace(good, `"count":7`, `"count":0`, 1),
		"metrics len":   strings.Replace(good, `[70,140]`, `[70]`, 1),
		"unnumbered":    strings.Replace(good, `"num_paths":4`, `"num_paths":0`, 1),
		"negative":      strings.Replace(good, `"count":7`, `"count":-7`, 1),
	} {
		if _, err := DecodeProfile([]byte(in)); !errors.Is(err, ErrBadProfile) {
			t.Errorf("%s: got %v, want ErrBadProfile", name, err)
		}
	}
}

// FuzzDecodeProfile: the decoder never panics, and what it accepts
// re-encodes to bytes it decodes to the same encoding.
func FuzzDecodeProfile(f *testing.F) {
	var buf bytes.Buffer
	if err := sampleProfile().Encode(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"version":1,"source":"s","metrics":[],"images":[]}`))
	f.Add([]byte(`{"version":1,"source":"s","metrics":["a"],"images":[{"id":"x","path":"","procs":[{"entry":1,"name":"","num_paths":2,"paths":[{"id":1,"count":1,"metrics":[5]}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodeProfile(data)
		if err != nil {
			return
		}
		var a, b bytes.Buffer
		if err := p.Encode(&a); err != nil {
			t.Fatalf("accepted profile does not encode: %v", err)
		}
		q, err := DecodeProfile(a.Bytes())
		if err != nil {
			t.Fatalf("re-decoding: %v", err)
		}
		if err := q.Encode(&b); err != nil || a.String() != b.String() {
			t.Fatalf("not stable: %v\n%s\n%s", err, a.String(), b.String())
		}
	})
}
