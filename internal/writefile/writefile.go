// Package writefile writes a file through a function that fills it, for
// the packages that save results (simhost, analysis/oracle) and may not
// import one another.
package writefile

import (
	"io"
	"os"
)

// With creates the file name and has write fill it; an error closing it
// (a full disk shows there) is an error of the write.
func With(name string, write func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
