package analysis

import (
	"errors"
	"path"
	"strings"
)

// ErrQuery is wrapped by errors about a query that cannot be run: a
// report's, dcpicalc's, a ProfileMe or pprof export's. Every tool shares
// it so that the command can tell a bad request from a failed read.
var ErrQuery = errors.New("bad query")

// MatchImagePath applies a query's ImagePaths to an image path p: an entry
// containing '/' must equal p, one without must equal its last element
// ("hashdb" matches "/bin/hashdb"); nil matches every path. It lives here,
// not with one report, because every tool selects images this way.
func MatchImagePath(paths []string, p string) bool {
	if paths == nil {
		return true
	}
	for _, want := range paths {
		if want == p || !strings.Contains(want, "/") && want == path.Base(p) {
			return true
		}
	}
	return false
}
