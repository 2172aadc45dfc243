package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestRead(t *testing.T) {
	vcs := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}, true
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	for _, tc := range []struct {
		name, ver, rev string
		bi             func() (*debug.BuildInfo, bool)
		want           Info
	}{
		{"stamped", "1.2.3", "feedface", vcs, Info{Version: "1.2.3", Commit: "feedface"}},
		{"vcs", "", "", vcs, Info{Version: "devel", Commit: "0123456789abcdef0123", Modified: true}},
		{"nothing", "", "", none, Info{Version: "devel"}},
	} {
		got := read(tc.ver, tc.rev, tc.bi)
		got.Go = ""
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if s := (Info{Version: "1.2.3", Commit: "0123456789abcdef", Modified: true, Go: "go1.26"}).String(); s != "1.2.3 (commit 0123456789ab+modified, go1.26)" {
		t.Errorf("String: %q", s)
	}
}
