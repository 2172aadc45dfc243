package pathupload

import (
	"bytes"
	"fmt"
	"maps"
	"strings"
	"testing"

	"dcpi/analysis/cct"
	"dcpi/analysis/instrument"
	"dcpi/analysis/paths"
	"dcpi/wire"
)

// FuzzReadPathFile feeds the readers of the files dcpi pp saves and dcpi
// pp upload reads (the oracle's save, oracle.ReadSaved; an instrumented
// run's path profile and its saved calling context tree,
// instrument.ReadSavedCCT) and of the upload IDs kept beside them
// arbitrary bytes: no input panics them; an image a reader accepts makes
// an upload that validates and survives the wire, or an error; and the
// upload IDs a file lists write back as the same lines.
func FuzzReadPathFile(f *testing.F) {
	key := "buildid:0123456789abcdef"
	tr := cct.New("calls", "instructions", "cycles")
	x := tr.Child(tr.Root, 0x120000100, 0)
	tr.Child(x, 0x120000200, 0x120000140)
	x.AddPath(1, 3)
	var tb bytes.Buffer
	if err := tr.Encode(&tb); err != nil {
		f.Fatal(err)
	}
	tree := strings.TrimSpace(tb.String())
	profile := func(source string) string {
		p := &paths.Profile{Source: source, Metrics: []string{"instructions"}, Images: []paths.ImageProfile{{ID: key, Path: "/bin/tiny",
			Procs: []paths.ProcProfile{{Entry: 0x120000100, Name: "main", NumPaths: 4, Paths: []paths.PathCount{{ID: 1, Count: 3, Metrics: []uint64{30}}}}}}}}
		var b bytes.Buffer
		if err := p.Encode(&b); err != nil {
			f.Fatal(err)
		}
		return strings.TrimSpace(b.String())
	}
	for _, s := range []string{
		fmt.Sprintf(`{"format":"dcpi-pp-oracle","version":1,"source":%q,"paths":%s,"cct":[{"path":"/bin/tiny","id":%q,"tree":%s}]}`, paths.OracleSource, profile(paths.OracleSource), key, tree),
		fmt.Sprintf(`{"format":"dcpi-pp-oracle","version":1,"source":%q,"paths":%s,"cct":[]}`, paths.OracleSource, profile(paths.OracleSource)),
		profile(instrument.ProfileSource),
		fmt.Sprintf(`{"format":"dcpi-pp-cct","version":1,"source":%q,"id":%q,"tree":%s}`, instrument.ProfileSource, key, tree),
		key + " 0123456789abcdef0123456789abcdef\nsha256:" + strings.Repeat("ab", 32) + " ffffffffffffffffffffffffffffffff\n",
		"{}", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, r := range readers {
			ims, ok, err := r.read(data)
			if !ok || err != nil {
				continue
			}
			for i := range ims {
				u, err := ims[i].Upload("alpha0", wire.UploadID{1})
				if err != nil {
					continue
				}
				b, err := u.MarshalBinary()
				if err != nil {
					t.Fatalf("%s: image %v: upload does not encode: %v", r.name, ims[i].Key, err)
				}
				var back wire.PathUpload
				if err := back.UnmarshalBinary(b); err != nil {
					t.Fatalf("%s: image %v: upload does not decode: %v", r.name, ims[i].Key, err)
				}
			}
		}
		u := &uploadIDs{path: "x.upload-ids", ids: map[wire.ImageKey]wire.UploadID{}}
		if err := u.read(bytes.NewReader(data)); err != nil {
			return
		}
		var b bytes.Buffer
		for k, id := range u.ids {
			fmt.Fprintf(&b, "%s %s\n", k, id)
		}
		again := &uploadIDs{path: "x.upload-ids", ids: map[wire.ImageKey]wire.UploadID{}}
		if err := again.read(&b); err != nil || !maps.Equal(again.ids, u.ids) {
			t.Fatalf("upload IDs %v written and read back as %v, %v", u.ids, again.ids, err)
		}
	})
}
