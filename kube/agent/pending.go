package agent

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
)

// pendingKeys are the objects the informers reported changed since the
// last sync, by namespace/name; the sync reads each from its informer's
// cache (gone: deleted), so that changes within minSyncPeriod make one
// Update.
type pendingKeys struct {
	services, slices map[string]bool
}

// pending collects pendingKeys from the informers' goroutines.
type pending struct {
	mu   sync.Mutex
	keys pendingKeys
}

func (p *pending) add(kind string, obj any) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	k := m.GetNamespace() + "/" + m.GetName()
	p.mu.Lock()
	defer p.mu.Unlock()
	switch kind {
	case kindService:
		if p.keys.services == nil {
			p.keys.services = map[string]bool{}
		}
		p.keys.services[k] = true
	case kindSlice:
		if p.keys.slices == nil {
			p.keys.slices = map[string]bool{}
		}
		p.keys.slices[k] = true
	}
}

// take returns the keys collected and starts anew.
func (p *pending) take() pendingKeys {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := p.keys
	p.keys = pendingKeys{}
	return k
}
