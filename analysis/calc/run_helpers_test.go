package calc

// Fixtures of the query's tests, as analysis/report's list tests build them.

import (
	"flag"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")
