package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dshq/dsh/bash/analysis"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/sandbox"
	"github.com/dshq/dsh/sandbox/linux"
	sbplugin "github.com/dshq/dsh/sandbox/plugin"
	"github.com/dshq/dsh/tool"
)

func init() { extraCommands = append(extraCommands, newSandboxCmd) }

func newSandboxCmd(stdio IO) *cobra.Command {
	var f flags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "what the kernel sandbox enforces here, and what a command may do in it",
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "print each sandbox layer on this machine (namespaces, Landlock ABI, seccomp) and whether commands are confined",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withSandbox(cmd.Context(), stdio, f, func(_ *core.Host, s *sbplugin.Service, cwd string) error {
				return printStatus(stdio.Out, s, asJSON)
			})
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	explain := &cobra.Command{
		Use:   "explain -- COMMAND",
		Short: "print what COMMAND may read, write and reach in the sandbox here, and which rule or mode says so",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSandbox(cmd.Context(), stdio, f, func(h *core.Host, s *sbplugin.Service, cwd string) error {
				return printExplain(stdio.Out, h, s, cwd, strings.Join(args, " "))
			})
		},
	}
	for _, c := range []*cobra.Command{status, explain} {
		c.Flags().StringVar(&f.settingsFile, "settings", "", "an extra settings file, applied last")
		c.Flags().StringVar(&f.sandbox, "sandbox", "", "the sandbox mode to report on")
		stringArrayVar(c.Flags(), &f.allowedTools, "allowedTools", "permission rules that allow")
		stringArrayVar(c.Flags(), &f.disallowedTools, "disallowedTools", "permission rules that deny")
		stringSliceVar(c.Flags(), &f.addDirs, "add-dir", "additional directories")
	}
	explain.Flags().StringVar(&f.permissionMode, "permission-mode", "", "the permission mode to decide in: "+permission.ModeNames())
	cmd.AddCommand(status, explain)
	return cmd
}

func withSandbox(ctx context.Context, stdio IO, f flags, fn func(*core.Host, *sbplugin.Service, string) error) error {
	quiet := stdio
	quiet.Interactive = false
	a, done, err := setup(ctx, quiet, f)
	if err != nil {
		return err
	}
	defer done()
	s, ok := core.Lookup[*sbplugin.Service](a.Host)
	if !ok {
		return errors.New("the sandbox plugin is switched off (enabledPlugins)")
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	return fn(a.Host, s, cwd)
}

func printStatus(w io.Writer, s *sbplugin.Service, asJSON bool) error {
	st := s.Status()
	mode := s.Mode("")
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		hooks, mcp := s.Others()
		return enc.Encode(struct {
			Mode sandbox.Mode `json:"mode"`
			sandbox.Status
			Hooks string `json:"hooks"`
			MCP   string `json:"mcp"`
		}{mode, st, hooks, mcp})
	}
	enf := "yes"
	if !st.Enforcing {
		enf = "NO: " + st.Reason
	}
	fmt.Fprintf(w, "sandbox: %s (%s)\nmode: %s\nenforcing: %s\n", st.Implementation, st.Platform, mode, enf)
	if st.LandlockABI > 0 {
		fmt.Fprintf(w, "landlock ABI: %d\n", st.LandlockABI)
	}
	switch st.Helper {
	case "":
	case "/proc/self/exe":
		fmt.Fprintln(w, "helper: dsh itself (install "+linux.HelperBinary+" next to dsh for a faster start)")
	default:
		fmt.Fprintf(w, "helper: %s\n", st.Helper)
	}
	for _, l := range st.Layers {
		mark := "on "
		if !l.Active {
			mark = "off"
		}
		line := fmt.Sprintf("  [%s] %s", mark, l.Name)
		if l.Detail != "" {
			line += ": " + l.Detail
		}
		fmt.Fprintln(w, line)
	}
	hooks, mcp := s.Others()
	fmt.Fprintf(w, "hook commands: %s\nstdio MCP servers: %s\n", hooks, mcp)
	if !st.Enforcing {
		fmt.Fprintln(w, "Commands still run with the layers that are on, and every command the permission layer would ask about asks.")
	}
	return nil
}

// printExplain shows, for one command line, the three things that decide
// what happens to it: how the shell analysis reads it (its commands and
// the files they touch), the permission rules' decision on that reading
// and the rule or mode that made it, and the sandbox policy it would run
// under, with what that policy does to each file the line names. Last it
// says whether the call asks and why, because the sandbox can lift the
// rules' question.
func printExplain(w io.Writer, h *core.Host, s *sbplugin.Service, cwd, command string) error {
	mode := s.Mode("")
	p, err := sandbox.Compile(s.Inputs("", cwd, mode))
	if err != nil {
		return err
	}
	st := s.Status()
	home := h.Site.UserHome
	fmt.Fprintf(w, "command: %s\n", command)

	line := analysis.Analyze(command, home)
	type named struct {
		path, text string
		write      bool
	}
	var files []named
	fmt.Fprintln(w, "parsed:")
	for _, c := range line.Commands {
		var notes []string
		switch {
		case c.ReadOnly:
			notes = append(notes, "read-only")
		case c.Neutral:
			notes = append(notes, "changes nothing outside the shell")
		}
		if c.Code {
			notes = append(notes, "runs code the analysis cannot read")
		}
		notes = append(notes, c.Hidden...)
		for _, pa := range c.Paths {
			if pa.Dynamic {
				notes = append(notes, fmt.Sprintf("%s %s (known only at run time)", pa.Access, pa.Text))
				continue
			}
			notes = append(notes, fmt.Sprintf("%s %s", pa.Access, pa.Text))
			if pa.Access != analysis.AccessDir {
				files = append(files, named{pa.Path, pa.Text, pa.Access != analysis.AccessRead})
			}
		}
		text := c.Text
		if len(notes) > 0 {
			text += "  (" + strings.Join(notes, "; ") + ")"
		}
		fmt.Fprintf(w, "  - %s\n", text)
	}
	for _, f := range line.Writes {
		fmt.Fprintf(w, "  - writes %s\n", f.Text)
		if !f.Dynamic {
			files = append(files, named{f.Path, f.Text, true})
		}
	}
	for _, f := range line.Reads {
		fmt.Fprintf(w, "  - reads %s\n", f.Text)
		if !f.Dynamic {
			files = append(files, named{f.Path, f.Text, false})
		}
	}
	for _, f := range line.Network {
		fmt.Fprintf(w, "  - connects through %s\n", f.Text)
	}
	for _, pr := range line.Problems {
		fmt.Fprintf(w, "  ! %s\n", pr)
	}

	call := fakeCall(command)
	var parser, final permission.Decision
	if c, ok := core.Lookup[*permission.Checker](h); ok {
		parser, final = c.Explain(context.Background(), call, cwd)
	} else {
		fmt.Fprintln(w, "permission: the permission plugin is switched off (enabledPlugins): nothing asks")
		parser = permission.Decision{Behavior: permission.Allow, Reason: "no permission layer"}
		final = parser
	}
	fmt.Fprintf(w, "permission rules: %s, decided by %s\n  %s\n", parser.Behavior, decider(parser), parser.Reason)

	fmt.Fprintf(w, "sandbox: %s", mode)
	switch {
	case !mode.Confines():
		fmt.Fprint(w, " (confines nothing)")
	case st.Enforcing:
		fmt.Fprintf(w, " (enforced by the kernel: %s, Landlock ABI %d)", st.Implementation, st.LandlockABI)
	default:
		fmt.Fprintf(w, " (NOT enforced here: %s)", st.Reason)
	}
	fmt.Fprintln(w)

	refused := 0
	if len(files) > 0 {
		fmt.Fprintln(w, "files the line names, in the sandbox:")
		for _, f := range files {
			abs := f.path
			if !filepath.IsAbs(abs) {
				abs = filepath.Join(cwd, abs)
			}
			what := "read"
			if f.write {
				what = "write"
			}
			ok, why := p.Access(abs, f.write, cwd, home)
			verdict := "allowed"
			if !ok {
				refused++
				verdict = "refused by the kernel"
				if !st.Enforcing {
					verdict = "would be refused (not enforced here)"
				}
			}
			fmt.Fprintf(w, "  %s %s: %s — %s\n", what, f.text, verdict, why)
		}
	}

	fmt.Fprintf(w, "approval: %s\n", approval(parser, final, mode, st))
	if refused > 0 && final.Behavior == permission.Allow && st.Enforcing {
		fmt.Fprintf(w, "  the kernel refuses %d of the accesses above: the command fails there, and the model may ask to re-run it outside the sandbox (dangerouslyDisableSandbox), which always asks you\n", refused)
	}
	if !mode.Confines() {
		fmt.Fprintln(w, "It may read, write and reach whatever you can; it only dies with its command and with dsh.")
		return nil
	}
	fmt.Fprintln(w, "read: everything, except:")
	for _, e := range p.Hidden {
		fmt.Fprintf(w, "  - %s  (%s)\n", e.Path, e.Why)
	}
	fmt.Fprintln(w, "  - the host's /tmp, /run and devices (a private /tmp, an empty /run, a minimal /dev)")
	fmt.Fprintln(w, "write:")
	for _, e := range p.Writable {
		fmt.Fprintf(w, "  + %s  (%s)\n", e.Path, e.Why)
	}
	fmt.Fprintln(w, "  + a private /tmp  (the sandbox's own)")
	if len(p.Protected) > 0 {
		fmt.Fprintln(w, "  but not (read-only):")
		for _, e := range p.Protected {
			if _, err := os.Lstat(e.Path); err == nil {
				fmt.Fprintf(w, "  - %s  (%s)\n", e.Path, e.Why)
			}
		}
	}
	fmt.Fprintln(w, "network:")
	if len(p.Network.Allow) == 0 {
		fmt.Fprintln(w, "  none (add domains to sandbox.network.allow, or WebFetch(domain:…) allow rules)")
	}
	for i, d := range p.Network.Allow {
		fmt.Fprintf(w, "  + %s through the proxy  (%s)\n", d, p.Network.AllowWhy[i])
	}
	fmt.Fprintln(w, "  loopback is the command's own; the host's private and loopback addresses are refused unless named literally")
	for _, u := range p.Unenforced {
		fmt.Fprintf(w, "not enforced by the kernel: %s\n", u)
	}
	return nil
}

// decider names what made a permission decision: a rule and its file, or
// the mode.
func decider(d permission.Decision) string {
	if d.Rule != "" {
		return fmt.Sprintf("%s rule %s (%s)", d.Behavior, d.Rule, d.Source)
	}
	return "the mode " + string(d.Mode)
}

// approval says what the call does in the end and why the sandbox did or
// did not change the permission rules' decision.
func approval(parser, final permission.Decision, mode sandbox.Mode, st sandbox.Status) string {
	switch {
	case final.Behavior == permission.Deny && final.Rule != "":
		return "denied — " + final.Reason + " (a deny rule denies whatever the sandbox does)"
	case final.Behavior == permission.Deny:
		return "denied — " + final.Reason
	case final.Behavior == permission.Allow && parser.Behavior == permission.Ask:
		return "runs without asking — " + final.Reason + "; without the sandbox it would ask"
	case final.Behavior == permission.Allow:
		return "runs without asking — " + final.Reason
	}
	why := final.Reason
	switch {
	case parser.Rule != "":
		why += " (an ask rule asks even in the sandbox)"
	case parser.Mode == permission.ModePlan:
		why += " (plan mode asks: a workspace-write sandbox would let a plan change files)"
	case !mode.Confines():
		why += " (" + string(mode) + " confines nothing, so the rules' question stands)"
	case !st.Enforcing:
		why += " (the sandbox does not enforce here: " + st.Reason + ")"
	default:
		why += " (the question holds inside the sandbox too)"
	}
	return "asks — " + why
}

func fakeCall(command string) tool.Call {
	b, _ := json.Marshal(map[string]string{"command": command, "description": "explain"})
	return tool.Call{Name: "bash", Args: b, Raw: string(b)}
}
