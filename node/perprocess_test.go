package node

import (
	"errors"
	"testing"
)

// TestPerProcess: paths match exactly, names match the path's last
// element, and "all" keeps every image per process.
func TestPerProcess(t *testing.T) {
	for _, c := range []struct {
		images []string
		path   string
		want   bool
	}{
		{nil, "/bin/sort", false},
		{[]string{"/bin/sort"}, "/bin/sort", true},
		{[]string{"/bin/sort"}, "/usr/bin/sort", false},
		{[]string{"sort"}, "/usr/bin/sort", true},
		{[]string{"sort"}, "/bin/sorter", false},
		{[]string{"hashdb", "/bin/sort"}, "/bin/hashdb", true},
		{[]string{PerProcessAll}, "/vmunix", true},
	} {
		p := newPerProcess(c.images)
		for range 2 { // the second answer comes from the cache
			if got := p.keeps(c.path); got != c.want {
				t.Errorf("%v keeps %s: %v, want %v", c.images, c.path, got, c.want)
			}
		}
	}
	for _, bad := range [][]string{{""}, {"all", "sort"}, {"/bin/"}, {"a\x00b"}} {
		if err := CheckPerProcess(bad); !errors.Is(err, ErrPerProcess) {
			t.Errorf("CheckPerProcess(%q) = %v", bad, err)
		}
	}
	if err := CheckPerProcess([]string{"sort", "/bin/hashdb"}); err != nil {
		t.Error(err)
	}
}
