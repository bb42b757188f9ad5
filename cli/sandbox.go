package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/sandbox"
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
			return withSandbox(cmd.Context(), stdio, f, func(s *sbplugin.Service, cwd string) error {
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
			return withSandbox(cmd.Context(), stdio, f, func(s *sbplugin.Service, cwd string) error {
				return printExplain(stdio.Out, s, cwd, strings.Join(args, " "))
			})
		},
	}
	for _, c := range []*cobra.Command{status, explain} {
		c.Flags().StringVar(&f.settingsFile, "settings", "", "an extra settings file, applied last")
		c.Flags().StringVar(&f.sandbox, "sandbox", "", "the sandbox mode to report on")
		c.Flags().StringArrayVar(&f.allowedTools, "allowedTools", nil, "permission rules that allow")
		c.Flags().StringArrayVar(&f.disallowedTools, "disallowedTools", nil, "permission rules that deny")
		c.Flags().StringSliceVar(&f.addDirs, "add-dir", nil, "additional directories")
	}
	cmd.AddCommand(status, explain)
	return cmd
}

func withSandbox(ctx context.Context, stdio IO, f flags, fn func(*sbplugin.Service, string) error) error {
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
	return fn(s, cwd)
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

func printExplain(w io.Writer, s *sbplugin.Service, cwd, command string) error {
	mode := s.Mode("")
	p, err := sandbox.Compile(s.Inputs("", cwd, mode))
	if err != nil {
		return err
	}
	st := s.Status()
	fmt.Fprintf(w, "command: %s\nmode: %s", command, mode)
	if !st.Enforcing && mode.Confines() {
		fmt.Fprintf(w, " (NOT enforced here: %s)", st.Reason)
	}
	fmt.Fprintln(w)
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
	if _, ok := s.Confines(context.Background(), fakeCall(command)); ok {
		fmt.Fprintln(w, "approval: runs without asking unless a rule says otherwise (the sandbox enforces)")
	} else {
		fmt.Fprintln(w, "approval: asks as the permission rules say (the sandbox does not enforce here)")
	}
	return nil
}

func fakeCall(command string) tool.Call {
	b, _ := json.Marshal(map[string]string{"command": command, "description": "explain"})
	return tool.Call{Name: "bash", Args: b, Raw: string(b)}
}
