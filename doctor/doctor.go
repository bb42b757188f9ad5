// Package doctor is the seam through which capabilities report their own
// health: what they could not load, what they skip, what failed to start.
// dsh's rule is that nothing unsupported is skipped silently; a warning on
// stderr scrolls away, so the same facts are kept here for `dsh doctor` to
// print on demand.
//
// A capability contributes a [Check] to the application's [Registry]; the
// check returns [Finding]s, each naming its capability, a severity, what is
// wrong and, when there is one, what to do. Checks run in registration
// order and must be quick and side-effect free: they report state the
// capability already has (a hook file it parsed, a server that failed), so
// `dsh doctor` shows what a real run would meet.
package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

// Severity ranks a finding.
type Severity string

// Severities, least to most serious.
const (
	OK      Severity = "ok"
	Info    Severity = "info"
	Warning Severity = "warning"
	Error   Severity = "error"
)

func (s Severity) rank() int {
	switch s {
	case Info:
		return 1
	case Warning:
		return 2
	case Error:
		return 3
	}
	return 0
}

// Finding is one fact a capability reports.
type Finding struct {
	// Capability names the reporter ("hooks", "mcp"); the registry fills
	// it from the check's name when it is empty.
	Capability string   `json:"capability"`
	Severity   Severity `json:"severity"`
	// Subject is what the finding is about: a file, a server, a hook.
	Subject string `json:"subject,omitempty"`
	// Message says what is the matter (or that all is well).
	Message string `json:"message"`
	// Fix says what to do about it, when something can be done.
	Fix string `json:"fix,omitempty"`
}

// Check reports a capability's findings.
type Check func(ctx context.Context) []Finding

// Registry holds the checks of an application. It is safe for concurrent
// use.
type Registry struct {
	mu     sync.Mutex
	checks []named
	next   int
}

type named struct {
	id   int
	name string
	fn   Check
}

// Add registers a check under a capability name; the returned function
// removes it.
func (r *Registry) Add(capability string, c Check) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	id := r.next
	r.checks = append(r.checks, named{id: id, name: capability, fn: c})
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for i, n := range r.checks {
			if n.id == id {
				r.checks = append(r.checks[:i], r.checks[i+1:]...)
				return
			}
		}
	}
}

// Run runs every check and returns their findings, grouped by capability
// in registration order. A check that panics becomes an error finding.
func (r *Registry) Run(ctx context.Context) []Finding {
	r.mu.Lock()
	checks := append([]named(nil), r.checks...)
	r.mu.Unlock()
	var out []Finding
	for _, c := range checks {
		for _, f := range run(ctx, c) {
			if f.Capability == "" {
				f.Capability = c.name
			}
			if f.Severity == "" {
				f.Severity = Info
			}
			out = append(out, f)
		}
	}
	order := map[string]int{}
	for _, f := range out {
		if _, ok := order[f.Capability]; !ok {
			order[f.Capability] = len(order)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return order[out[i].Capability] < order[out[j].Capability] })
	return out
}

func run(ctx context.Context, c named) (fs []Finding) {
	defer func() {
		if v := recover(); v != nil {
			fs = []Finding{{Capability: c.name, Severity: Error, Message: fmt.Sprintf("the %s check crashed: %v", c.name, v)}}
		}
	}()
	return c.fn(ctx)
}

// Worst is the most serious severity among findings (OK when there are
// none).
func Worst(fs []Finding) Severity {
	w := OK
	for _, f := range fs {
		if f.Severity.rank() > w.rank() {
			w = f.Severity
		}
	}
	return w
}

// Print writes findings for a person: one section per capability, one
// line per finding, its fix indented under it.
func Print(w io.Writer, fs []Finding) {
	if len(fs) == 0 {
		fmt.Fprintln(w, "No findings.")
		return
	}
	last := ""
	for _, f := range fs {
		if f.Capability != last {
			if last != "" {
				fmt.Fprintln(w)
			}
			fmt.Fprintln(w, f.Capability)
			last = f.Capability
		}
		line := "  " + mark(f.Severity) + " "
		if f.Subject != "" {
			line += f.Subject + ": "
		}
		fmt.Fprintln(w, line+oneLine(f.Message))
		if f.Fix != "" {
			fmt.Fprintln(w, "      → "+oneLine(f.Fix))
		}
	}
}

// PrintJSON writes the findings as a JSON array.
func PrintJSON(w io.Writer, fs []Finding) error {
	if fs == nil {
		fs = []Finding{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(fs)
}

func mark(s Severity) string {
	switch s {
	case OK:
		return "ok     "
	case Warning:
		return "warning"
	case Error:
		return "error  "
	}
	return "info   "
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
