package cli

import (
	"context"
	"os"
	"strings"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/ui/term"
)

// runInteractive runs the terminal UI on the process's terminal.
var runInteractive = func(ctx context.Context, stdio IO, a *app.App, resume session.ID, first string) error {
	h, err := home(stdio.Env)
	if err != nil {
		return usageErr("%v", err)
	}
	cwd, _ := os.Getwd()
	// The terminal UI owns the screen from here: warnings go to the log.
	muteWarnings.Store(true)
	defer muteWarnings.Store(false)
	return term.Run(ctx, term.Options{
		In: stdio.In, Out: stdio.Out, App: a, Resume: resume, FirstPrompt: first,
		Home: h, Env: stdio.Env, Version: Version, Cwd: cwd,
		Permissions: func() []string { return permissionLines(h, cwd) },
	})
}

// permissionLines describes the permission settings of the user, project
// and local settings files for /permissions.
//
// TODO: show the live policy (including --permission-mode and --settings)
// once app exposes it.
func permissionLines(home, cwd string) []string {
	s, _, err := settings.Load(settings.Paths{Home: home, Project: cwd})
	if err != nil {
		return []string{"permissions: " + err.Error()}
	}
	p := s.Permissions
	mode := p.DefaultMode
	if mode == "" {
		mode = "default"
	}
	lines := []string{"permission mode: " + mode + " (from settings; --permission-mode is not reflected here yet)"}
	rule := func(name string, rs []string) {
		if len(rs) == 0 {
			lines = append(lines, "  "+name+": (none)")
			return
		}
		lines = append(lines, "  "+name+": "+strings.Join(rs, ", "))
	}
	rule("allow", p.Allow)
	rule("ask", p.Ask)
	rule("deny", p.Deny)
	if len(p.AdditionalDirectories) > 0 {
		lines = append(lines, "  additional directories: "+strings.Join(p.AdditionalDirectories, ", "))
	}
	return lines
}
