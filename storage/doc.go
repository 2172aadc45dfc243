// Package storage is the Pebble schema of the profile database: epochs ×
// events × images × offsets (× host) → counts, written with merge operators
// and batches, read through narrow interfaces. It is the only importer of
// Pebble.
//
// Status: issue 5; this package holds nothing yet.
package storage
