// Package proxiertest helps test programs built on a proxier.Proxier
// without a kernel: NewFakeDeps makes every fake a Proxier needs in one
// call (an empty node in memory: validate a State and see the plan it
// would apply, with no root and no IPVS), and an Injector makes the
// Proxier's kernel operations fail, for tests that prove a Proxier
// survives them: ipvskit's own fault sweep and its users' tests.
//
// An Injector wraps a proxier.Deps (the real kernel clients, or the fakes
// of ipvstest, dummytest, sysctltest and conntracktest) and counts every
// operation the Proxier makes through it, in order: each request of an
// IPVS batch, each address of a VIP link Update, each filter (one
// frontend's stale flows) of a conntrack Delete, each other call of the
// Deps interfaces (link Ensure, Addrs and Delete, IPVS reads, the sysctl
// profile and its Apply, each rules back end's Apply and Cleanup).
// Rules.Render is not counted: it only renders text, and Sync never calls
// it. Armed with a fault, the Injector makes one operation fail with an
// *InjectedError: the operation with a given index, or the first one a
// predicate selects (At picks a subsystem and a position in it). Ops lists
// what a run did, so a sweep can count the operations of a clean run and
// then fail each in turn:
//
//	in := proxiertest.New()
//	deps := in.Wrap(proxiertest.NewFakeDeps(nil).Deps())
//	p, _ := proxier.New(nil, deps)
//	p.Sync(ctx, &a)                       // the state to start from
//	in.Reset()                            // count from here
//	in.FailAt(3, proxiertest.CutShort)    // the fourth operation of the next sync fails
//	_, err := p.Sync(ctx, &b)             // err is a *proxier.OpError around the injected failure
//	_, err = p.Sync(ctx, &b)              // must converge
//
// How a failing operation behaves inside a call that makes several (an IPVS
// batch, a link Update of several addresses, a conntrack Delete of several
// filters) is the fault's Mode:
//
//   - CutShort: the operations before it in the call take effect; it and
//     those after it do not, as when a batch is cut short by a socket error
//     or a dying process. An IPVS batch returns an *ipvs.BatchError whose Err
//     is the injected failure and whose later requests wrap ipvs.ErrNotSent;
//     an Update binds (then unbinds) the addresses before the failing one
//     only, and its error names each later address with an error wrapping
//     ipvs.ErrNotSent.
//   - Refuse: only it fails; the others of the call take effect, as when the
//     kernel refuses one request of a batch and carries on (which it does for
//     IPVS batches and for the address requests of dummy.Client.Update).
//   - LoseReply: the whole call takes effect and then reports the failure, as
//     when the answer is lost or the deadline passes after the kernel acted.
//
// A call of a single operation fails before it reaches the client under
// CutShort and Refuse, and after it under LoseReply. The error a failing
// call returns is the client's own type where it has one (an
// *ipvs.BatchError or *ipvs.Error for IPVS, a *dummy.Error for the link, a
// *conntrack.Error for conntrack), joined with any error the client itself
// returned; it wraps the *InjectedError, and errors.Is(err, ErrInjected)
// holds. A call the client
// would refuse as invalid (an IPVS batch with an invalid request, an Update
// with an invalid address, a Delete with an invalid filter) is passed
// through uncounted: it never reaches the kernel.
package proxiertest
