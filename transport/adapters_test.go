package transport_test

import (
	"dcpi/aggregator"
	"dcpi/node"
	"dcpi/transport"
)

// transport imports neither package it serves; these keep its adapters in
// step with the interfaces those packages declare.
var (
	_ aggregator.Source       = transport.BatchSource{}
	_ aggregator.ImageStore   = transport.BatchSource{}
	_ aggregator.ValuesSource = (*transport.ValuesSource)(nil)
	_ node.Publisher          = (*transport.Publisher)(nil)
)
