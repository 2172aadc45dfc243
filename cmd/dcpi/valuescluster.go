package main

import (
	"context"
	"dcpi/coordinator"
	"dcpi/storage"
	"dcpi/wire"
)

// clusterValues reads value sampling's hot lists and accounting from the
// cluster's query service (analysis/values.Source), as dcpi values --nats
// does.
type clusterValues struct {
	ctx          context.Context
	c            *coordinator.Client
	linearizable bool
}

func (v clusterValues) ValueLists(q storage.ValueQuery) ([]wire.ValueList, error) {
	return v.c.ValueLists(v.ctx, storage.Query{Epochs: q.Epochs, Hosts: q.Hosts}, v.linearizable)
}

func (v clusterValues) ValueTotals(q storage.ValueQuery) ([]string, wire.ValueStats, error) {
	return v.c.ValueTotals(v.ctx, storage.Query{Epochs: q.Epochs, Hosts: q.Hosts}, v.linearizable)
}
