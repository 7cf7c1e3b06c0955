package apiservertest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ipvskit/ipvskit/kube/internal/apiservertest"
)

// eventTimeout bounds each wait for a watch event or the end of a watch.
const eventTimeout = 30 * time.Second

// TestServer creates objects, restarts the API server, stops and starts it,
// and checks that the objects survive, the URL stays, requests fail while
// it is down, and watches end on Stop and work after Start.
func TestServer(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := t.Context()
	c := s.Client()
	url := s.Config().Host
	const ns = "default"

	svc, err := c.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Service: %v", err)
	}
	if svc.Spec.ClusterIP == "" {
		t.Fatalf("Service %s got no cluster IP", svc.Name)
	}
	eps, err := c.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.1.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create EndpointSlice: %v", err)
	}
	if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Node: %v", err)
	}
	if _, err := c.CoreV1().Events(ns).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Service", Namespace: ns, Name: "web", UID: svc.UID},
		Reason:         "Test",
		Message:        "created by apiservertest",
		Type:           corev1.EventTypeNormal,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Event: %v", err)
	}

	s.Restart(t)
	if got := s.Config().Host; got != url {
		t.Errorf("after Restart the server is at %s, was at %s", got, url)
	}
	checkSurvived(ctx, t, c, svc, eps)

	w, err := c.DiscoveryV1().EndpointSlices(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch EndpointSlices: %v", err)
	}
	s.Stop(t)
	waitClosed(t, w)
	getCtx, cancel := context.WithTimeout(ctx, eventTimeout)
	_, err = c.CoreV1().Services(ns).Get(getCtx, "web", metav1.GetOptions{})
	cancel()
	var status apierrors.APIStatus
	switch {
	case err == nil:
		t.Fatal("get Service while stopped: no error")
	case errors.As(err, &status):
		t.Fatalf("get Service while stopped: the API server answered: %v", err)
	}
	t.Logf("get Service while stopped: %v", err)

	s.Start(t)
	checkSurvived(ctx, t, c, svc, eps)
	w, err = c.DiscoveryV1().EndpointSlices(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch EndpointSlices after Start: %v", err)
	}
	defer w.Stop()
	eps.Endpoints = append(eps.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.1.0.2"}})
	if _, err := c.DiscoveryV1().EndpointSlices(ns).Update(ctx, eps, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update EndpointSlice after Start: %v", err)
	}
	waitModified(t, w, 2)
}

// checkSurvived reads svc and eps back and compares what identifies them.
func checkSurvived(ctx context.Context, t *testing.T, c kubernetes.Interface, svc *corev1.Service, eps *discoveryv1.EndpointSlice) {
	t.Helper()
	gotSvc, err := c.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Service: %v", err)
	}
	if gotSvc.UID != svc.UID || gotSvc.Spec.ClusterIP != svc.Spec.ClusterIP {
		t.Errorf("Service: got UID %s cluster IP %s, want %s %s", gotSvc.UID, gotSvc.Spec.ClusterIP, svc.UID, svc.Spec.ClusterIP)
	}
	gotEPS, err := c.DiscoveryV1().EndpointSlices(eps.Namespace).Get(ctx, eps.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get EndpointSlice: %v", err)
	}
	if gotEPS.UID != eps.UID || gotEPS.ResourceVersion != eps.ResourceVersion {
		t.Errorf("EndpointSlice: got UID %s version %s, want %s %s", gotEPS.UID, gotEPS.ResourceVersion, eps.UID, eps.ResourceVersion)
	}
	if _, err := c.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{}); err != nil {
		t.Errorf("get Node: %v", err)
	}
}

// waitClosed reads w until the server ends it.
func waitClosed(t *testing.T, w watch.Interface) {
	t.Helper()
	timer := time.NewTimer(eventTimeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			t.Logf("watch event while stopping: %s", ev.Type)
		case <-timer.C:
			w.Stop()
			t.Fatalf("watch still open %v after Stop", eventTimeout)
		}
	}
}

// waitModified waits for an EndpointSlice to be modified to n endpoints.
func waitModified(t *testing.T, w watch.Interface, n int) {
	t.Helper()
	timer := time.NewTimer(eventTimeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch ended before the update arrived")
			}
			if eps, isEPS := ev.Object.(*discoveryv1.EndpointSlice); ev.Type == watch.Modified && isEPS && len(eps.Endpoints) == n {
				return
			}
			t.Logf("watch event: %s", ev.Type)
		case <-timer.C:
			t.Fatalf("no update within %v", eventTimeout)
		}
	}
}
