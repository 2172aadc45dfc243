package main

import (
	"io"

	"dcpi/analysis/imagefind"
)

// newImageFinder is the finder of a tool whose images come from o: the
// cluster's upload when o is a cluster, and the --image-dir directories.
func newImageFinder(log io.Writer, o *openedSource, dirs []string) imagefind.Finder {
	if o == nil {
		return imagefind.New(log, nil, dirs)
	}
	return imagefind.New(log, o.ImageFile, dirs)
}
