// Package loadgen owns the load generator's recording and replay: the
// versioned file that holds what one simulated host's agent published
// (its sample batches and image records, each at the simulated time it
// was cut), and the rewriting that turns that one host into many — each
// replayed agent gets its own host name, its own sequence numbers,
// epoch and time line, and republishes the images. It is pure: reading
// and writing bytes, rewriting values. The command around it
// (cmd/dcpi/loadgen.go) records with a real simulated host and replays
// against a real cluster.
package loadgen
