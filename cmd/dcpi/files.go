package main

import (
	"io"
	"os"
)

// writeFileWith creates the file name and has write fill it; an error
// closing it (a full disk shows there) is an error of the write.
func writeFileWith(name string, write func(io.Writer) error) error {
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
