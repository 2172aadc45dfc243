// Package coordinator is the Raft-replicated owner of the shared profile
// database: its FSM applies deltas through package storage, and it keeps
// epochs, fleet membership, the image registry and the query service.
//
// Status: issue 5; this package holds nothing yet.
package coordinator
