package ipvstest

import (
	"syscall"

	"github.com/ipvskit/ipvskit/internal/nlconn"
	"github.com/ipvskit/ipvskit/ipvs"
)

// noService is the Client's error for op on object when service k is
// missing: the kernel's ESRCH, named as a missing virtual server.
func noService(op, object string, k ipvs.ServiceKey) error {
	return &ipvs.Error{Op: op, Object: object, Err: &ipvs.NoServiceError{Service: norm(k), Err: &nlconn.Error{Errno: syscall.ESRCH}}}
}

// unavailable is the Client's error when the kernel has no scheduler or
// persistence engine of the names s asks for. The kernel's ENOENT does not
// say which of the two is missing, so, like the Client, it names both when
// s sets both.
func unavailable(op, object string, s ipvs.Service) error {
	e := &ipvs.UnavailableError{PersistenceEngine: s.PersistenceEngine, Errno: syscall.ENOENT}
	if s.Scheduler != "none" {
		e.Scheduler = s.Scheduler
	}
	return &ipvs.Error{Op: op, Object: object, Err: e}
}
