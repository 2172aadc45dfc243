// Package buildinfo says which dcpi this binary is: the release version
// and commit a release build stamps with -ldflags -X (make release
// VERSION=x.y.z), else what the Go toolchain recorded of the module and
// its version-control state (debug.ReadBuildInfo). It owns nothing else.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by a release build: go build -ldflags "-X dcpi/internal/buildinfo.version=1.2.3
// -X dcpi/internal/buildinfo.commit=abc123".
var version, commit string

// Info is one binary's identity.
type Info struct {
	Version  string // "1.2.3", or "devel" when no release stamped it
	Commit   string // full revision, "" when unknown
	Modified bool   // built from a work tree with uncommitted changes
	Go       string // toolchain version
}

// Read returns this binary's Info: the stamped values first, then the
// build's recorded version-control settings.
func Read() Info {
	return read(version, commit, debug.ReadBuildInfo)
}

func read(ver, rev string, bi func() (*debug.BuildInfo, bool)) Info {
	in := Info{Version: ver, Commit: rev, Go: runtime.Version()}
	if b, ok := bi(); ok {
		if in.Version == "" && b.Main.Version != "" && b.Main.Version != "(devel)" {
			in.Version = b.Main.Version
		}
		for _, s := range b.Settings {
			switch s.Key {
			case "vcs.revision":
				if in.Commit == "" {
					in.Commit = s.Value
				}
			case "vcs.modified":
				if rev == "" {
					in.Modified = s.Value == "true"
				}
			}
		}
	}
	if in.Version == "" {
		in.Version = "devel"
	}
	return in
}

// String is the line dcpi --version prints: "1.2.3 (commit 0123456789ab, go1.26.0)".
func (in Info) String() string {
	c := in.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if c == "" {
		c = "unknown"
	}
	if in.Modified {
		c += "+modified"
	}
	return fmt.Sprintf("%s (commit %s, %s)", in.Version, c, in.Go)
}
