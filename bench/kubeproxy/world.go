package main

import (
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/kubernetes/pkg/proxy"
)

// world is what the proxier has been told so far.
type world struct {
	p      proxy.Provider
	n      int // syncs done
	last   objects
	synced bool
}

// apply tells the proxier what changed since the last state, as an informer
// would, then runs one full sync.
func (w *world) apply(next objects) {
	for k, old := range w.last.services {
		if _, ok := next.services[k]; !ok {
			w.p.OnServiceDelete(old)
		}
	}
	for k, old := range w.last.slices {
		if _, ok := next.slices[k]; !ok {
			w.p.OnEndpointSliceDelete(old)
		}
	}
	for k, s := range next.services {
		switch old, ok := w.last.services[k]; {
		case !ok:
			w.p.OnServiceAdd(s)
		case !equality.Semantic.DeepEqual(old, s):
			w.p.OnServiceUpdate(old, s)
		}
	}
	for k, s := range next.slices {
		switch old, ok := w.last.slices[k]; {
		case !ok:
			w.p.OnEndpointSliceAdd(s)
		case !equality.Semantic.DeepEqual(old, s):
			w.p.OnEndpointSliceUpdate(old, s)
		}
	}
	w.last = next
	// The first call marks services synced (no sync yet: endpoints are
	// not); every call to OnEndpointSlicesSynced runs syncProxyRules
	// synchronously.
	if !w.synced {
		w.p.OnServiceSynced()
		w.synced = true
	}
	w.p.OnEndpointSlicesSynced()
}

// objects are the Services and EndpointSlices of one read of the file, by
// namespace/name.
type objects struct {
	services map[string]*v1.Service
	slices   map[string]*discovery.EndpointSlice
}
