package tool

import "context"

// Progress is output a running call produced so far (a command's stdout
// and stderr as they arrive). It is for people watching, never for the
// model and never recorded: the call's result is what counts. Front-ends
// listen on [Registry.Progress] and keep what they show bounded.
type Progress struct {
	Call Call
	// Output is the text produced since the previous report (not the
	// whole output so far), as the tool read it: it may end inside a
	// line or a UTF-8 sequence.
	Output []byte
}

type progressKey struct{}

// ReportOutput tells whoever watches the call ctx runs that it produced
// out. Tools call it while they run; it is cheap when nobody listens and
// never blocks on a slow listener beyond the listener's own work. Outside
// a call run by a [Registry] it does nothing.
func ReportOutput(ctx context.Context, out []byte) {
	if len(out) == 0 {
		return
	}
	if f, _ := ctx.Value(progressKey{}).(func([]byte)); f != nil {
		f(out)
	}
}

// withProgress makes ReportOutput in a call's run reach r.Progress, when
// anyone listens.
func (r *Registry) withProgress(ctx context.Context, call Call) context.Context {
	if r.Progress.Len() == 0 {
		return ctx
	}
	return context.WithValue(ctx, progressKey{}, func(out []byte) {
		_ = r.Progress.EmitAll(ctx, Progress{Call: call, Output: append([]byte(nil), out...)})
	})
}
