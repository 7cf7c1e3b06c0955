package agent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// Labels kube-proxy selects by (and so does the agent).
const (
	LabelServiceProxyName = "service.kubernetes.io/service-proxy-name"
	LabelHeadless         = "service.kubernetes.io/headless"
)

// What changed, as sources report it.
const (
	kindService = "service"
	kindSlice   = "endpointslice"
	kindNode    = "node"
)

// sources are the informers: Services and EndpointSlices (without the
// headless ones, and of this proxy's name), and the agent's own Node.
type sources struct {
	objects  informers.SharedInformerFactory
	node     informers.SharedInformerFactory
	svcs     corelisters.ServiceLister
	eps      discoverylisters.EndpointSliceLister
	nodes    corelisters.NodeLister
	synced   []cache.InformerSynced
	nodeName string
	changed  func(kind string, obj any)
}

func newSources(c kubernetes.Interface, nodeName, proxyName string, resync time.Duration, changed func(string, any)) *sources {
	sel := selector(proxyName)
	s := &sources{nodeName: nodeName, changed: changed}
	s.objects = informers.NewSharedInformerFactoryWithOptions(c, resync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }))
	s.node = informers.NewSharedInformerFactoryWithOptions(c, resync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", nodeName).String()
		}))
	svc := s.objects.Core().V1().Services()
	eps := s.objects.Discovery().V1().EndpointSlices()
	node := s.node.Core().V1().Nodes()
	s.svcs, s.eps, s.nodes = svc.Lister(), eps.Lister(), node.Lister()
	for _, x := range []struct {
		inf  cache.SharedIndexInformer
		kind string
	}{{svc.Informer(), kindService}, {eps.Informer(), kindSlice}, {node.Informer(), kindNode}} {
		x.inf.AddEventHandler(s.handler(x.kind))
		s.synced = append(s.synced, x.inf.HasSynced)
	}
	return s
}

// selector is kube-proxy's: no headless Services' slices, and only the
// objects of this proxy's name (none when it has no name).
func selector(proxyName string) string {
	sel := labels.NewSelector()
	headless, _ := labels.NewRequirement(LabelHeadless, selection.DoesNotExist, nil)
	sel = sel.Add(*headless)
	var name *labels.Requirement
	if proxyName == "" {
		name, _ = labels.NewRequirement(LabelServiceProxyName, selection.DoesNotExist, nil)
	} else {
		name, _ = labels.NewRequirement(LabelServiceProxyName, selection.Equals, []string{proxyName})
	}
	return sel.Add(*name).String()
}

// handler reports real changes: an informer's periodic resync hands back
// the same objects, which change nothing.
func (s *sources) handler(kind string) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { s.changed(kind, obj) },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(metav1.Object)
			c, ok2 := cur.(metav1.Object)
			if ok1 && ok2 && o.GetResourceVersion() == c.GetResourceVersion() {
				return
			}
			s.changed(kind, cur)
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			s.changed(kind, obj)
		},
	}
}

func (s *sources) start(ctx context.Context) {
	s.objects.Start(ctx.Done())
	s.node.Start(ctx.Done())
}

// wait returns when the informers have their first lists.
func (s *sources) wait(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return fmt.Errorf("agent: waiting for the informers: %w", context.Cause(ctx))
	}
	return nil
}

// waitNode returns the agent's Node once it exists (and, with podCIDRs,
// once it has them).
func (s *sources) waitNode(ctx context.Context, podCIDRs bool) (*corev1.Node, error) {
	for {
		if n, err := s.nodes.Get(s.nodeName); err == nil && (!podCIDRs || len(n.Spec.PodCIDRs) > 0 || n.Spec.PodCIDR != "") {
			return n, nil
		}
		// The Node informer reports every change: wait for the next one.
		ch := make(chan struct{}, 1)
		reg, err := s.node.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { notify(ch) },
			UpdateFunc: func(any, any) { notify(ch) },
		})
		if err != nil {
			return nil, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
		}
		s.node.Core().V1().Nodes().Informer().RemoveEventHandler(reg)
		if ctx.Err() != nil {
			what := "Node " + s.nodeName
			if podCIDRs {
				what += " with podCIDRs (detectLocalMode NodeCIDR)"
			}
			return nil, fmt.Errorf("agent: waiting for %s: %w", what, context.Cause(ctx))
		}
	}
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// services, slices and node read the informers' caches.
func (s *sources) services() []*corev1.Service {
	l, _ := s.svcs.List(labels.Everything())
	return l
}

func (s *sources) slices() []*discoveryv1.EndpointSlice {
	l, _ := s.eps.List(labels.Everything())
	return l
}

func (s *sources) currentNode() *corev1.Node {
	n, _ := s.nodes.Get(s.nodeName)
	return n
}
