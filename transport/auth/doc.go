// Package auth owns the cluster's NATS credentials: it generates them in a
// server's data directory on first start (one NKey per role, one or more
// per host), issues and revokes hosts' keys, turns them into the server's
// users with per-role permissions, makes the TLS certificate authority and
// the server's certificate for non-loopback listeners, issues the
// coordinator replicas' Raft credentials from a CA of their own (mutual
// TLS between replicas; the coordinator takes the tls.Config and links
// no credentials code), and lets a local
// role of the same Unix user find them (Lookup) so that the demo and the
// examples run authenticated with nothing to configure.
//
// The layout of <data dir>/auth (0700; every file 0600):
//
//	coordinator.nk, aggregator.nk, query.nk   the roles' NKey seeds
//	hosts/<host>/<public key>.nk              a host's seeds (several while one is rotated)
//	ca.pem, ca-key.pem, server.pem, server-key.pem  TLS, when the server listens beyond loopback
//	raft-ca.pem, raft-ca-key.pem              the Raft CA, which signs replicas' Raft certificates only
//	raft/<replica id>.pem                     a replica's Raft credential: certificate, key, Raft CA
//	loaded                                    public keys the running server accepts
//
// The server reads only public keys: a host's is its file's name, so a
// host's seed can be copied to the host and deleted here.
package auth
