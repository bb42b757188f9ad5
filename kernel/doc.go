// Package kernel holds dsh's interception points and scopes. It knows nothing
// about agents, sessions or tools: it is the small substrate every other
// package plugs into.
//
// Four dispatch modes cover every extension point in dsh:
//
//   - [Chain]: around-middleware. Each listener receives the input and a next
//     function; it may call next (possibly with a different context), wrap the
//     result, or answer without calling next at all (short-circuit).
//   - [Serial]: listeners run one after another, in order; the first error
//     stops the run. A listener may return [ErrStop] to end the run early
//     without an error (the reference's "bail").
//   - [Parallel]: listeners run concurrently; Run waits for all and joins
//     their errors.
//   - [Signal]: notifications of facts that already happened. Listeners run in
//     order on the emitting goroutine; the first error stops the emission and
//     is returned to the emitter, which decides whether to contain it.
//
// Registration returns a disposer; [Scope] collects disposers so a plugin's
// registrations are undone together, in reverse order. Listener lists are
// copy-on-write, so dispatch never holds a lock while listeners run and
// listeners may register or dispose re-entrantly.
//
// A panicking listener never takes the process down: every dispatch recovers
// the panic and returns it as a [*PanicError], which the caller handles like
// any other listener error.
package kernel
