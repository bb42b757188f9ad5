package memory

import (
	"fmt"

	"github.com/dshq/dsh/doctor"
)

// Findings reports a set for `dsh doctor`: every file taken, and every one
// found and left out with the reason.
func Findings(s *Set) []doctor.Finding {
	var out []doctor.Finding
	for _, f := range s.Files {
		msg := fmt.Sprintf("used (%s, %d bytes)", f.label(), f.Size)
		sev := doctor.OK
		if f.Truncated {
			sev = doctor.Warning
			msg = fmt.Sprintf("used, but cut at %d KiB of %d bytes (%s)", MaxFileBytes>>10, f.Size, f.label())
		}
		out = append(out, doctor.Finding{Severity: sev, Subject: f.Path, Message: msg})
	}
	for _, sk := range s.Skipped {
		f := doctor.Finding{Severity: doctor.Warning, Subject: sk.Path, Message: "skipped: " + skipText(sk)}
		switch sk.Reason {
		case SkipUntrusted:
			f.Fix = "trust the project (run dsh here interactively, or pass --trust)"
		case SkipShadowed, SkipDuplicate, SkipEmpty:
			f.Severity = doctor.Info
		case SkipBudget:
			f.Fix = fmt.Sprintf("memory files are capped at %d KiB in all: shorten the files before it", MaxTotalBytes>>10)
		case SkipCycle:
			f.Fix = "remove the @import that closes the cycle"
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		out = append(out, doctor.Finding{Severity: doctor.Info, Message: "no memory files (CLAUDE.md, AGENTS.md, …) here or in your home directory"})
	}
	return out
}

func skipText(sk Skip) string {
	var why string
	switch sk.Reason {
	case SkipUntrusted:
		why = "the project is not trusted yet"
	case SkipShadowed:
		why = "shadowed"
	case SkipEmpty:
		why = "empty"
	case SkipNotRegular:
		why = "not a regular file"
	case SkipOutside:
		why = "outside what may be imported"
	case SkipCycle:
		why = "an import cycle"
	case SkipDepth:
		why = "imports nested too deep"
	case SkipDenied:
		why = "denied by a permission rule"
	case SkipBudget:
		why = "over the memory size budget"
	case SkipUnreadable:
		why = "unreadable"
	case SkipDuplicate:
		why = "already included"
	default:
		why = sk.Reason
	}
	if sk.Detail != "" {
		why += " (" + sk.Detail + ")"
	}
	return why
}
