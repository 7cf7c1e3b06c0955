package convert

import (
	"testing"

	"github.com/ipvskit/ipvskit/proxier"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// The same endpoint listed by two EndpointSlices (normal while an endpoint
// moves between slices) is one proxier.Endpoint, as kube-proxy keeps one,
// since the Proxier refuses two endpoints that would be one destination;
// and Kubernetes has no weights: every endpoint keeps the default weight,
// 1, with no quiesce and no thresholds.
func TestConvertMergesCopiesAndLeavesWeightsAtOne(t *testing.T) {
	sp := []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}
	got, skipped := Convert(Input{
		Services: []*corev1.Service{service("web", cip, []corev1.ServicePort{tcp("http", 80)})},
		Slices: []*discoveryv1.EndpointSlice{
			slice("web-a", "web", v4, sp, ep("198.18.1.1"), ep("198.18.1.2")),
			slice("web-b", "web", v4, sp, ep("198.18.1.1"), ep("198.18.1.2", terminating)),
		},
		Node: node(),
	})
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	eps := got.Services["ns/web:http"].Endpoints
	if len(eps) != 2 || eps[0].Addr.String() != "198.18.1.1" || eps[1].Addr.String() != "198.18.1.2" || eps[1].Terminating {
		t.Fatalf("endpoints %+v, want 198.18.1.1 and the ready 198.18.1.2, once each", eps)
	}
	for _, e := range eps {
		if e.Weight != 0 || e.Quiesced || e.UpperThreshold != 0 || e.LowerThreshold != 0 {
			t.Errorf("%v: weight %d, quiesced %v, thresholds %d/%d; want the defaults", e.Addr, e.Weight, e.Quiesced, e.UpperThreshold, e.LowerThreshold)
		}
	}
	if err := got.Validate(&proxier.Config{}); err != nil {
		t.Errorf("the converted State is invalid: %v", err)
	}
}
