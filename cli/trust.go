package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/permission/trust"
	"github.com/dshq/dsh/settings"
)

// projectTrust decides whether the project's own configuration applies.
// Interactive runs ask once per change of those files; headless and ACP
// runs need --trust (which records the trust) or an earlier answer.
func projectTrust(stdio IO, home, cwd string, flagTrust bool) (bool, error) {
	ok, files, store, err := storedTrust(home, cwd)
	if err != nil {
		return false, fmt.Errorf("reading the trust list: %w", err)
	}
	if ok {
		return true, nil
	}
	if !flagTrust && stdio.Interactive {
		fmt.Fprintf(stdio.Err, "This folder has its own dsh/Claude/Codex settings, hooks or MCP servers:\n  %s\nThey can run commands on your machine. Trust this folder? [y/N] ", cwd)
		line, _ := bufio.NewReader(stdio.In).ReadString('\n')
		flagTrust = strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y")
	}
	if !flagTrust {
		fmt.Fprintf(stdio.Err, "dsh: ignoring this project's settings, hooks and MCP servers until you trust it (run dsh interactively, or pass --trust)\n")
		return false, nil
	}
	if err := store.Trust(cwd, files...); err != nil {
		return false, fmt.Errorf("recording trust: %w", err)
	}
	return true, nil
}

// trustedSources drops project layers when the project is not trusted.
func trustedSources(srcs []settings.Source, trusted bool) []settings.Source {
	if trusted {
		return srcs
	}
	var out []settings.Source
	for _, s := range srcs {
		if s.Layer != settings.LayerProject && s.Layer != settings.LayerLocal {
			out = append(out, s)
		}
	}
	return out
}

func merged(srcs []settings.Source) settings.Settings {
	var s settings.Settings
	for _, src := range srcs {
		s = settings.Merge(s, src.Settings)
	}
	return s
}

// permissions builds the checker from trusted settings and flags.
func permissions(srcs []settings.Source, f flags, home, userHome, cwd string, addDirs []string) (*permission.Checker, []string, error) {
	cfg, warnings := permission.FromSettings(srcs)
	cfg.Home, cfg.Cwd = userHome, cwd
	cfg.Roots = append(cfg.Roots, addDirs...)
	// --allowedTools and --disallowedTools add rules, as in Claude Code.
	for _, r := range splitRules(f.allowedTools) {
		cfg.Rules = append(cfg.Rules, permission.Rule{Text: r, Behavior: permission.Allow, Source: "--allowedTools"})
	}
	for _, r := range splitRules(f.disallowedTools) {
		cfg.Rules = append(cfg.Rules, permission.Rule{Text: r, Behavior: permission.Deny, Source: "--disallowedTools"})
	}
	if f.permissionMode != "" {
		cfg.Mode, cfg.ModeSource = permission.Mode(f.permissionMode), permission.LayerCLI
	}
	c, err := permission.New(cfg)
	if err != nil {
		return nil, warnings, err
	}
	return c, append(warnings, c.Warnings()...), nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// splitRules splits flag values on commas and spaces outside parentheses,
// so "Bash(git log:*) Read" is two rules.
func splitRules(vals []string) []string {
	var out []string
	for _, v := range vals {
		depth, start := 0, 0
		for i, r := range v {
			switch {
			case r == '(':
				depth++
			case r == ')':
				depth--
			case (r == ',' || r == ' ') && depth == 0:
				if t := strings.TrimSpace(v[start:i]); t != "" {
					out = append(out, t)
				}
				start = i + 1
			}
		}
		// The rest, unbalanced parentheses included: the permission parser
		// reports a malformed rule rather than it vanishing here.
		if t := strings.TrimSpace(v[start:]); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// storedTrust reports whether dir's project files may apply without
// asking: it has none (nothing a project could smuggle in), or the user
// trusted exactly these files before. It also returns the files and the
// store, for recording a new answer.
func storedTrust(home, dir string) (bool, []string, *trust.Store, error) {
	files := trust.ProjectFiles(dir)
	store := &trust.Store{Path: filepath.Join(home, "trust.json")}
	if !slices.ContainsFunc(files, fileExists) {
		return true, files, store, nil
	}
	ok, err := store.IsTrusted(dir, files...)
	return ok, files, store, err
}

// trustedElsewhere reports whether dir's project files may take effect for
// a session recorded there (a resumed session of another directory): only
// when dir has none or the user trusted it before. It never prompts.
func trustedElsewhere(home, dir string) bool {
	ok, _, _, err := storedTrust(home, dir)
	return err == nil && ok
}
