package pprofexport

import (
	"fmt"
	"io"

	"github.com/google/pprof/profile"

	"dcpi/internal/writefile"
)

// Save writes p to the file name, or to stdout when name is "-", and
// returns where the export's one-line summary belongs: stdout beside a
// file, stderr beside a profile on standard output, where a line of text
// would corrupt the gzip'd stream a pipe reads.
func Save(p *profile.Profile, name string, stdout, stderr io.Writer) (summary io.Writer, err error) {
	if name == "-" {
		if err := p.Write(stdout); err != nil {
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
		return stderr, nil
	}
	if err := writefile.With(name, p.Write); err != nil {
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	return stdout, nil
}
