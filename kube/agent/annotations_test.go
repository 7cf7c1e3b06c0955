package agent

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
)

func annotated(name string, ann map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: ann}}
}

func TestSchedulerAnnotations(t *testing.T) {
	st := &proxier.State{Services: map[string]proxier.Service{
		"ns/hash:http": {}, "ns/hash:https": {}, // both ports of one Service
		"ns/plain":     {}, // an unnamed port
		"ns/bad:http":  {},
		"ns/flags:dns": {},
		"ns/hashes":    {}, // a Service whose name starts like another's
	}}
	svcs := []*corev1.Service{
		annotated("hash", map[string]string{AnnotationScheduler: "mh", AnnotationSchedulerFlags: "mh-fallback, mh-port"}),
		annotated("plain", nil),
		annotated("bad", map[string]string{AnnotationScheduler: "fastest"}),
		annotated("flags", map[string]string{AnnotationSchedulerFlags: "sh-port"}), // a flag of sh, default wlc
		annotated("hashes", map[string]string{AnnotationScheduler: "sh", AnnotationSchedulerFlags: "flag-3"}),
	}
	errs := applySchedulers(st, svcs, "wlc")
	want := map[string]struct {
		sched string
		flags ipvs.SchedFlags
	}{
		"ns/hash:http": {"mh", ipvs.MHFallback | ipvs.MHPort}, "ns/hash:https": {"mh", ipvs.MHFallback | ipvs.MHPort},
		"ns/plain": {"wlc", 0}, "ns/bad:http": {"wlc", 0}, "ns/flags:dns": {"wlc", 0}, "ns/hashes": {"sh", ipvs.SchedFlag3},
	}
	for id, w := range want {
		if s := st.Services[id]; s.Scheduler != w.sched || s.SchedulerFlags != w.flags {
			t.Errorf("%s: scheduler %q flags %v, want %q %v", id, s.Scheduler, s.SchedulerFlags, w.sched, w.flags)
		}
	}
	if len(errs) != 2 {
		t.Fatalf("errors %v, want two (bad's scheduler, flags' sh flag on wlc)", errs)
	}
	for i, w := range []struct{ svc, ann string }{{"ns/bad", AnnotationScheduler}, {"ns/flags", AnnotationSchedulerFlags}} {
		var ae *AnnotationError
		if !errors.As(errs[i], &ae) || ae.Service != w.svc || ae.Annotation != w.ann {
			t.Errorf("error %d: %v, want an *AnnotationError for %s %s", i, errs[i], w.svc, w.ann)
		}
	}
}
