package wire_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/hwsim/elfimage"
	"dcpi/wire"
)

func TestImageKeyParse(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		in      string
		wantErr string // "" = valid, round trips through String
	}{
		{in: "sha256:" + sha},
		{in: "buildid:0123456789abcdef0123456789abcdef01234567"},
		{in: "buildid:01"},
		{in: "buildid:" + sha},
		{in: "buildid:" + sha + "00", wantErr: "more than 32 bytes"},
		{in: "buildid:", wantErr: "build ID of 0 bytes"},
		{in: "sha256:abcd", wantErr: "sha256 needs 32 bytes"},
		{in: "md5:abcd", wantErr: "unknown kind"},
		{in: "nocolon", wantErr: "want kind:hex"},
		{in: "buildid:xyz0", wantErr: "bad hex"},
		{in: "buildid:abc", wantErr: "bad hex"},
	} {
		k, err := wire.ParseImageKey(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, wire.ErrImageKey) {
				t.Errorf("ParseImageKey(%q) = %v, %v; want error containing %q", tc.in, k, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseImageKey(%q): %v", tc.in, err)
			continue
		}
		if got := k.String(); got != tc.in {
			t.Errorf("String() = %q, want %q", got, tc.in)
		}
		if err := k.Check(); err != nil {
			t.Errorf("%q: Check: %v", tc.in, err)
		}
		// The elfimage form and ours name the same identity.
		id, err := elfimage.ParseImageID(tc.in)
		if err != nil {
			t.Errorf("elfimage.ParseImageID(%q): %v", tc.in, err)
		} else if id.String() != k.String() {
			t.Errorf("elfimage %q != wire %q", id.String(), k.String())
		}
		j, err := json.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		var back wire.ImageKey
		if err := json.Unmarshal(j, &back); err != nil || back != k {
			t.Errorf("JSON round trip %s: %v, %v", j, back, err)
		}
	}
}

func TestImageKeyCheck(t *testing.T) {
	good := wire.MustParseImageKey("buildid:0102")
	for _, tc := range []struct {
		name string
		mod  func(k *wire.ImageKey)
		want string
	}{
		{"zero", func(k *wire.ImageKey) { *k = wire.ImageKey{} }, "unknown kind 0"},
		{"kind", func(k *wire.ImageKey) { k[0] = 9 }, "unknown kind 9"},
		{"length", func(k *wire.ImageKey) { k[1] = 40 }, "length 40"},
		{"padding", func(k *wire.ImageKey) { k[33] = 1 }, "nonzero padding"},
		{"sha length", func(k *wire.ImageKey) { k[0] = byte(wire.KindSHA256) }, "sha256 needs 32"},
	} {
		k := good
		tc.mod(&k)
		if err := k.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Check = %v, want %q", tc.name, err, tc.want)
		}
	}
	if good.Kind() != wire.KindBuildID || string(good.ID()) != "\x01\x02" {
		t.Errorf("Kind/ID = %v %x", good.Kind(), good.ID())
	}
}

// TestImageKeyFromWorkloads converts the IDs of the committed workload
// binaries, as the node will.
func TestImageKeyFromWorkloads(t *testing.T) {
	paths, _ := filepath.Glob("../workloads/bin/*")
	if len(paths) == 0 {
		t.Skip("no workload binaries")
	}
	seen := map[wire.ImageKey]string{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		im, err := elfimage.Parse(data, p)
		if err != nil {
			continue // not every file there is an executable
		}
		k, err := wire.ParseImageKey(im.ID.String())
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if other, dup := seen[k]; dup {
			t.Errorf("%s and %s share key %v", p, other, k)
		}
		seen[k] = p
	}
	if len(seen) == 0 {
		t.Skip("no parsable workload binaries")
	}
}
