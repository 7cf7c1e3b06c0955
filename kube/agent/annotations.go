package agent

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ipvskit/ipvskit/ipvs"
	"github.com/ipvskit/ipvskit/proxier"
)

// The per-Service annotations.
const (
	// AnnotationScheduler is the IPVS scheduler of the Service's virtual
	// servers, one of Schedulers; it overrides ipvs.scheduler.
	AnnotationScheduler = "ipvskit.io/scheduler"
	// AnnotationSchedulerFlags are its flags, comma-separated, as ipvsadm's
	// --sched-flags names them: flag-1, flag-2, flag-3, and sh-fallback,
	// sh-port (sh), mh-fallback, mh-port (mh).
	AnnotationSchedulerFlags = "ipvskit.io/scheduler-flags"
)

var schedFlagNames = map[string]ipvs.SchedFlags{
	"flag-1": ipvs.SchedFlag1, "flag-2": ipvs.SchedFlag2, "flag-3": ipvs.SchedFlag3,
	"sh-fallback": ipvs.SHFallback, "sh-port": ipvs.SHPort,
	"mh-fallback": ipvs.MHFallback, "mh-port": ipvs.MHPort,
}

// AnnotationError is an annotation of a Service the agent cannot apply; the
// Service is served with the node's scheduler instead.
type AnnotationError struct {
	Service    string // namespace/name
	Annotation string
	Value      string
	Reason     string
}

func (e *AnnotationError) Error() string {
	return fmt.Sprintf("service %s: annotation %s: %q: %s", e.Service, e.Annotation, e.Value, e.Reason)
}

// schedulerOf reads a Service's scheduler annotations: the scheduler (def
// without one) and its flags (flags alone apply to def).
func schedulerOf(svc *corev1.Service, def string) (sched string, flags ipvs.SchedFlags, err error) {
	name := svc.Namespace + "/" + svc.Name
	sched = def
	if v, ok := svc.Annotations[AnnotationScheduler]; ok {
		v = strings.TrimSpace(v)
		if !slices.Contains(Schedulers, v) {
			return def, 0, &AnnotationError{Service: name, Annotation: AnnotationScheduler, Value: v,
				Reason: "not one of " + strings.Join(Schedulers, ", ")}
		}
		sched = v
	}
	if v, ok := svc.Annotations[AnnotationSchedulerFlags]; ok {
		for _, f := range strings.Split(v, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			b, ok := schedFlagNames[f]
			if !ok {
				return def, 0, &AnnotationError{Service: name, Annotation: AnnotationSchedulerFlags, Value: v,
					Reason: fmt.Sprintf("unknown flag %q", f)}
			}
			if prefix, _, named := strings.Cut(f, "-"); named && prefix != "flag" && prefix != sched {
				return def, 0, &AnnotationError{Service: name, Annotation: AnnotationSchedulerFlags, Value: v,
					Reason: fmt.Sprintf("%s is a flag of scheduler %s, not %s", f, prefix, or(sched, "rr"))}
			}
			flags |= b
		}
	}
	return sched, flags, nil
}

// applySchedulers sets every proxier.Service's scheduler: the annotation's,
// or def. IDs are "namespace/name:port" or "namespace/name" (package
// convert), so a Service's ports are found by the part before ':'.
func applySchedulers(st *proxier.State, svcs []*corev1.Service, def string) []error {
	type choice struct {
		sched string
		flags ipvs.SchedFlags
	}
	chosen := map[string]choice{}
	var errs []error
	for _, s := range svcs {
		if s.Annotations[AnnotationScheduler] == "" && s.Annotations[AnnotationSchedulerFlags] == "" {
			continue
		}
		sched, flags, err := schedulerOf(s, def)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		chosen[s.Namespace+"/"+s.Name] = choice{sched, flags}
	}
	for id, s := range st.Services {
		key, _, _ := strings.Cut(id, ":")
		c, ok := chosen[key]
		if !ok {
			c = choice{sched: def}
		}
		s.Scheduler, s.SchedulerFlags = c.sched, c.flags
		st.Services[id] = s
	}
	return errs
}
