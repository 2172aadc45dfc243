package cct

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Encoding: JSON, one object {"version":1,"metrics":[names],"nodes":[...]}
// with the records in preorder (children in key order), the root first;
// each record names its parent by index (-1 for the root) and its
// backedges by the index of their target. The same tree always encodes to
// the same bytes.
const encodingVersion = 1

type encTree struct {
	Version int       `json:"version"`
	Metrics []string  `json:"metrics"`
	Nodes   []encNode `json:"nodes"`
}

type encNode struct {
	Parent    int               `json:"parent"`
	Proc      uint64            `json:"proc"`
	CallSite  uint64            `json:"site,omitempty"`
	Metrics   []uint64          `json:"metrics"`
	Paths     map[uint64]uint64 `json:"paths,omitempty"`
	Recursive []encBack         `json:"recursive,omitempty"`
}

type encBack struct {
	CallSite uint64 `json:"site"`
	To       int    `json:"to"`
}

// MarshalJSON encodes t deterministically.
func (t *Tree) MarshalJSON() ([]byte, error) {
	e := encTree{Version: encodingVersion, Metrics: t.Metrics}
	if e.Metrics == nil {
		e.Metrics = []string{}
	}
	index := map[*Node]int{}
	t.Walk(func(n *Node) {
		index[n] = len(e.Nodes)
		en := encNode{Parent: -1, Proc: n.Proc, CallSite: n.CallSite, Metrics: n.Metrics, Paths: n.Paths}
		if n.Parent != nil {
			en.Parent = index[n.Parent]
		}
		e.Nodes = append(e.Nodes, en)
	})
	t.Walk(func(n *Node) {
		en := &e.Nodes[index[n]]
		for _, b := range n.Recursive {
			en.Recursive = append(en.Recursive, encBack{CallSite: b.CallSite, To: index[b.To]})
		}
	})
	return json.Marshal(e)
}

// Encode writes t's encoding to w.
func (t *Tree) Encode(w io.Writer) error {
	b, err := t.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Decode reads a tree Encode wrote, refusing anything that is not one:
// unknown fields or version, a root that is not first or has a key,
// parents that do not come first, duplicate keys under a parent, a
// procedure twice on one chain (recursion must be folded), metric vectors
// of the wrong length, backedges to anything but an ancestor.
func Decode(data []byte) (*Tree, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var e encTree
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("cct: %w", err)
	}
	if dec.More() {
		return nil, errors.New("cct: data after the tree")
	}
	if e.Version != encodingVersion {
		return nil, fmt.Errorf("cct: encoding version %d, want %d", e.Version, encodingVersion)
	}
	if len(e.Nodes) == 0 {
		return nil, errors.New("cct: no root record")
	}
	for i, m := range e.Metrics {
		for _, o := range e.Metrics[:i] {
			if m == o {
				return nil, fmt.Errorf("cct: metric %q named twice", m)
			}
		}
	}
	t := New(e.Metrics...)
	nodes := make([]*Node, len(e.Nodes))
	for i, en := range e.Nodes {
		if len(en.Metrics) != len(e.Metrics) {
			return nil, fmt.Errorf("cct: record %d has %d metrics, want %d", i, len(en.Metrics), len(e.Metrics))
		}
		var n *Node
		if i == 0 {
			if en.Parent != -1 || en.Proc != 0 || en.CallSite != 0 {
				return nil, errors.New("cct: record 0 is not a root (parent -1, no procedure)")
			}
			n = t.Root
		} else {
			if en.Parent < 0 || en.Parent >= i {
				return nil, fmt.Errorf("cct: record %d: parent %d does not precede it", i, en.Parent)
			}
			parent := nodes[en.Parent]
			k := Key{Proc: en.Proc, CallSite: en.CallSite}
			if parent.index[k] != nil {
				return nil, fmt.Errorf("cct: record %d: key %#x@%#x twice under record %d", i, k.Proc, k.CallSite, en.Parent)
			}
			for a := parent; a != t.Root; a = a.Parent {
				if a.Proc == en.Proc {
					return nil, fmt.Errorf("cct: record %d: procedure %#x already on its chain (recursion not folded)", i, en.Proc)
				}
			}
			n = t.newNode(parent, k)
		}
		copy(n.Metrics, en.Metrics)
		for id, c := range en.Paths {
			n.AddPath(id, c)
		}
		nodes[i] = n
	}
	for i, en := range e.Nodes {
		n := nodes[i]
		for _, b := range en.Recursive {
			if b.To <= 0 || b.To > i {
				return nil, fmt.Errorf("cct: record %d: backedge to record %d, not an ancestor", i, b.To)
			}
			to := nodes[b.To]
			ok := false
			for a := n; a != nil; a = a.Parent {
				if a == to {
					ok = true
				}
			}
			if !ok {
				return nil, fmt.Errorf("cct: record %d: backedge to record %d, not an ancestor", i, b.To)
			}
			for _, have := range n.Recursive {
				if have.CallSite == b.CallSite && have.To == to {
					return nil, fmt.Errorf("cct: record %d: backedge %#x->%d twice", i, b.CallSite, b.To)
				}
			}
			n.Recursive = append(n.Recursive, Backedge{CallSite: b.CallSite, To: to})
		}
	}
	return t, nil
}
