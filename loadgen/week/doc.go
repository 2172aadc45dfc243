// Package week operates a fleet for simulated days and measures what
// continuous operation costs (docs/week.md): a cluster in
// this process whose coordinator replicas run on a clock the driver
// advances an hour at a time, hosts that replay a loadgen recording into
// each hour's epoch, the leader cutting an epoch on every hourly boundary
// and applying a retention policy, and after every simulated hour the
// database's size, the time of a "last hour" and a "last week" dcpiprof
// query, the conservation totals and the cuts made. Time is simulated,
// never waited: each step waits for the cluster's progress (the hour's
// samples stored, its cut committed and sealed, retention caught up).
//
// It owns the driver and the pure checks a run's series must pass; the
// cluster is package cluster's, the replay loadgen's, the queries
// profiledb's. internal/tools/weekrun is its command (make week).
package week
