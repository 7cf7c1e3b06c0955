package ipvs

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
)

// UnavailableError says the kernel has no scheduler (or persistence engine)
// of the name a service asked for: the module that provides it is neither
// loaded nor loadable. errors.Is(err, ErrNotSupported) holds; unlike the
// errno the kernel answered with (ENOENT, kept in Errno), it does not match
// fs.ErrNotExist, which would read as "no such service".
//
// ip_vs_ctl.c's ip_vs_add_service and ip_vs_edit_service look the scheduler
// up first and the persistence engine next, and answer ENOENT for either
// without saying which; when the service names both, both are set here.
type UnavailableError struct {
	// Scheduler is the scheduler that may be missing, or "".
	Scheduler string
	// PersistenceEngine is the persistence engine that may be missing, or "".
	PersistenceEngine string
	// Errno is what the kernel answered.
	Errno syscall.Errno
}

func (e *UnavailableError) Error() string {
	var what, mods []string
	if e.Scheduler != "" {
		what = append(what, fmt.Sprintf("scheduler %q", e.Scheduler))
		mods = append(mods, "ip_vs_"+e.Scheduler)
	}
	if e.PersistenceEngine != "" {
		what = append(what, fmt.Sprintf("persistence engine %q", e.PersistenceEngine))
		mods = append(mods, "ip_vs_pe_"+e.PersistenceEngine)
	}
	return strings.Join(what, " or ") + " not available (module " + strings.Join(mods, " or ") + ")"
}

// Is reports whether target is ErrNotSupported.
func (e *UnavailableError) Is(target error) bool { return target == ErrNotSupported }

// NoServiceError says the virtual server a request names does not exist:
// the kernel answers ESRCH for every request on a service other than adding
// it (ip_vs_ctl.c, ip_vs_genl_set_cmd and ip_vs_genl_get_cmd).
// errors.Is(err, fs.ErrNotExist) holds, and so does errors.Is(err,
// syscall.ESRCH).
type NoServiceError struct {
	Service ServiceKey
	// Err is the kernel's answer.
	Err error
}

func (e *NoServiceError) Error() string { return "no such virtual server " + e.Service.String() }

// Is reports whether target is fs.ErrNotExist.
func (e *NoServiceError) Is(target error) bool { return target == fs.ErrNotExist }

// Unwrap returns the kernel's answer.
func (e *NoServiceError) Unwrap() error { return e.Err }

// kernelCause turns the kernel's answer to op into an error that names what
// failed, when the errno alone would mislead: ENOENT on adding or changing a
// service is a missing scheduler or persistence engine, not a missing
// object; ESRCH on anything but adding a service is a missing virtual
// server, not a missing process. Other errors are returned as they are.
func kernelCause(op Op, err error) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err
	}
	switch {
	case errno == syscall.ENOENT && (op.Kind == OpAddService || op.Kind == OpUpdateService):
		if u := unavailable(op.Service, errno); u.Scheduler != "" || u.PersistenceEngine != "" {
			return u
		}
	case errno == syscall.ESRCH && op.Kind != OpAddService:
		return &NoServiceError{Service: op.Service.Key().normal(), Err: err}
	}
	return err
}

// unavailable is the UnavailableError for s: the scheduler unless s binds
// none ("none" is looked up by no one), and the persistence engine if s
// names one.
func unavailable(s Service, errno syscall.Errno) *UnavailableError {
	e := &UnavailableError{PersistenceEngine: s.PersistenceEngine, Errno: errno}
	if s.Scheduler != "none" {
		e.Scheduler = s.Scheduler
	}
	return e
}

// opError is newError for a request of a batch or a single call on op.
func opError(op Op, err error) error {
	if err == nil {
		return nil
	}
	e := newError(op.Kind.String(), op.object(), err).(*Error)
	e.Err = kernelCause(op, err)
	return e
}

// serviceMissing maps ESRCH in err, an *Error from a request on service k
// (get, zero), to a NoServiceError.
func serviceMissing(k ServiceKey, err error) error {
	var e *Error
	if errors.As(err, &e) {
		e.Err = kernelCause(Op{Kind: OpDeleteService, Service: keyService(k)}, e.Err)
	}
	return err
}
