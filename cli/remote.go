package cli

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/client"
	"github.com/dshq/dsh/serve/remote"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/ui/term"
)

func init() { extraCommands = append(extraCommands, newRemoteCmd) }

// remoteFlags reach a dsh serve: its URL and the token.
type remoteFlags struct {
	server string
	token  string
}

func (r *remoteFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&r.server, "server", "", "the dsh serve to use (default $DSH_SERVE_URL, else http://127.0.0.1:7878)")
	fl.StringVar(&r.token, "token", "", "the bearer token (default $DSH_SERVE_TOKEN; prefer the variable: arguments show in ps)")
}

// client makes the API client; the token is never printed.
func (r *remoteFlags) client(stdio IO) (*client.Client, error) {
	server := r.server
	if server == "" {
		server = stdio.Env("DSH_SERVE_URL")
	}
	if server == "" {
		server = "http://127.0.0.1:7878"
	}
	if !strings.HasPrefix(server, "http://") && !strings.HasPrefix(server, "https://") {
		return nil, usageErr("--server %q: want an http:// or https:// URL", server)
	}
	tok := r.token
	if tok == "" {
		tok = stdio.Env("DSH_SERVE_TOKEN")
	}
	if tok == "" {
		return nil, usageErr("no token: set DSH_SERVE_TOKEN (or --token) to one made with `dsh serve token create` on the server")
	}
	return client.New(server, tok), nil
}

func newRemoteCmd(stdio IO) *cobra.Command {
	var (
		rf                remoteFlags
		print             bool
		format, approveBy string
		partial           bool
		sid               string
		create            api.CreateSession
	)
	cmd := &cobra.Command{
		Use:   "remote",
		Short: "drive sessions of a dsh serve: a headless prompt (-p), attach the terminal UI to a running session, list sessions",
		Long: `dsh remote talks to a dsh serve (docs/serve.md) with a token from
DSH_SERVE_TOKEN (or --token).

  dsh remote -p "run the tests" --server http://host:7878 --workspace myrepo
  dsh remote sessions
  dsh remote attach ID

-p prints the turn in dsh -p's output formats and exits with dsh -p's codes.
Questions the agent asks are denied (--approve deny, as dsh -p does), allowed
(--approve allow), or left for dsh remote attach or the API (--approve wait).`,
		Args:          cobra.ArbitraryArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !print {
				return usageErr("dsh remote: give a prompt with -p, or a subcommand (attach, sessions); dsh remote --help")
			}
			c, err := rf.client(stdio)
			if err != nil {
				return err
			}
			prompt := strings.Join(args, " ")
			if strings.TrimSpace(prompt) == "" && stdio.In != nil {
				b, err := io.ReadAll(io.LimitReader(stdio.In, stdinCap))
				if err != nil {
					return usageErr("reading the prompt from stdin: %v", err)
				}
				prompt = string(b)
			}
			code, err := remote.Prompt(cmd.Context(), remote.PromptOptions{
				Client: c, Session: session.ID(sid), Create: create, Prompt: prompt,
				Format: format, IncludePartialMessages: partial, Approve: approveBy,
				Out: stdio.Out, Err: stdio.Err, Version: Version,
			})
			if err != nil || code != 0 {
				if err == nil {
					err = errors.New("")
				}
				return &ExitError{Code: code, Err: err}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	rf.register(cmd.PersistentFlags())
	fl.BoolVarP(&print, "print", "p", false, "send the prompt (arguments or stdin), print the turn and exit")
	fl.StringVar(&format, "output-format", "text", "text, json (Claude Code's result), stream-json (Claude Code's messages) or events (dsh's session events)")
	fl.BoolVar(&partial, "include-partial-messages", false, "stream-json: also emit stream_event lines with partial deltas")
	fl.StringVar(&approveBy, "approve", remote.ApproveDeny, "what a question of the agent becomes: deny, allow, or wait (for dsh remote attach or the API)")
	fl.StringVar(&sid, "session", "", "continue this session instead of creating one")
	fl.StringVar(&create.Workspace, "workspace", "", "the new session's directory: absolute, or relative to the server's first root (default: that root)")
	fl.StringVar(&create.Model, "model", "", "the new session's model (default: the workspace's)")
	fl.StringVar(&create.PermissionMode, "permission-mode", "", "the new session's permission mode: default, acceptEdits, plan, bypassPermissions")
	fl.StringVar(&create.Sandbox, "sandbox", "", "the new session's sandbox mode: read-only, workspace-write, danger-full-access")
	fl.StringVar(&create.Agent, "agent", "", "run the new session as this custom agent of the workspace")
	cmd.AddCommand(newRemoteSessionsCmd(stdio, &rf), newRemoteAttachCmd(stdio, &rf))
	return cmd
}

func newRemoteSessionsCmd(stdio IO, rf *remoteFlags) *cobra.Command {
	var o remote.ListOptions
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "list the server's sessions this token may see, newest activity first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := rf.client(stdio)
			if err != nil {
				return err
			}
			o.Client, o.Out = c, stdio.Out
			return remote.List(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Workspace, "workspace", "", "only sessions working in this directory")
	cmd.Flags().StringVar(&o.Status, "status", "", "only sessions in this state: idle, running, stored")
	cmd.Flags().IntVar(&o.Limit, "limit", 0, "at most this many")
	return cmd
}

func newRemoteAttachCmd(stdio IO, rf *remoteFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "attach ID",
		Short: "stream a session of the server into the terminal UI: its history, then live text and tool cards; answer its questions, send and steer messages",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := rf.client(stdio)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			s, err := c.Session(ctx, session.ID(args[0]))
			if err != nil {
				return remoteErr(ctx, err)
			}
			vim, err := userEditorVim(stdio)
			if err != nil {
				return err
			}
			return term.Attach(ctx, term.AttachOptions{
				In: stdio.In, Out: stdio.Out, Env: stdio.Env, Version: Version, Vim: vim,
				Remote: remote.Session{Client: c, ID: s.ID}, ID: s.ID, Cwd: s.Workspace, Model: s.Model,
			})
		},
	}
}

// userEditorVim reads "editorMode" from the user's settings (the session's
// project is the server's, not this machine's): the attached prompt edits
// as the local one does.
func userEditorVim(stdio IO) (bool, error) {
	h, err := home(stdio.Env)
	if err != nil {
		return false, usageErr("%v", err)
	}
	cfg, err := settings.Load(settings.Input{Paths: settings.Paths{Home: h}, Schema: app.Schema()})
	if err != nil {
		return false, err
	}
	return app.EditorModeKey.Get(cfg) == "vim", nil
}

// remoteErr is the exit of a request the server refused.
func remoteErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	if st := client.StatusOf(err); st == 400 || st == 401 || st == 403 || st == 404 {
		return usageErr("%v", err)
	}
	return err
}
