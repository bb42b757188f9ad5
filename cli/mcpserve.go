package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/dshq/dsh/acp"
	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/mcpserve"
)

// newMCPServeCmd is `dsh mcp serve`: dsh as an MCP server.
func newMCPServeCmd(stdio IO) *cobra.Command {
	var f flags
	var addr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "serve dsh as an MCP server (stdio, or streamable HTTP with --http)",
		Long: `dsh mcp serve makes dsh a Model Context Protocol server: its tool "dsh" runs a
prompt as a dsh agent in a directory (cwd, absolute) and returns the answer and
a session_id; a later call with that session_id continues the same session.
Progress notifications follow the agent's steps, and cancelling the call stops
the agent. Permission questions go to the client through MCP elicitation when
it supports it; otherwise the permission mode and rules decide (asks are
refused), as in dsh -p.

On stdio (the default) the client starts "dsh mcp serve" itself. With
--http ADDR (e.g. --http 127.0.0.1:8765) dsh serves streamable HTTP at /mcp;
every request needs "Authorization: Bearer TOKEN", with TOKEN from
$DSH_MCP_TOKEN, or one dsh makes and prints on stderr.

Claude Code: claude mcp add dsh -- dsh mcp serve`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMCPServe(cmd.Context(), stdio, f, addr)
		},
	}
	fl := cmd.Flags()
	// The same configuration flags as dsh, dsh -p and dsh acp.
	f.register(fl, false)
	fl.StringVar(&addr, "http", "", "serve streamable HTTP on this address (host:port) instead of stdio")
	fl.SetNormalizeFunc(claudeNames)
	return cmd
}

func runMCPServe(ctx context.Context, stdio IO, f flags, addr string) error {
	h, err := home(stdio.Env)
	if err != nil {
		return usageErr("%v", err)
	}
	if err := privateHome(stdio, h); err != nil {
		return usageErr("creating %s: %v", h, err)
	}
	fileLog, closeLog, err := logger(h, f.verbose, stdio.Err)
	if err != nil {
		return usageErr("%v", err)
	}
	defer closeLog()
	log := slog.New(slog.NewMultiHandler(fileLog.Handler(), slog.NewTextHandler(stdio.Err, &slog.HandlerOptions{Level: slog.LevelWarn})))
	cwd, _ := os.Getwd()
	// Nobody can be asked about trust here (stdio is the protocol): a
	// directory's own configuration applies once trusted, interactively
	// before, or with --trust, which records it for each directory a call
	// names.
	quiet := IO{In: stdio.In, Out: io.Discard, Err: stdio.Err, Env: stdio.Env, InTerminal: true}
	var mu sync.Mutex
	var closers []func()
	srv := mcpserve.New(mcpserve.Options{
		Cwd: cwd, Version: Version, Logger: log,
		App: func(ctx context.Context, dir string) (*app.App, error) {
			a, done, err := setupIn(ctx, quiet, f, dir)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			closers = append(closers, done)
			mu.Unlock()
			return a, nil
		},
	})
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range closers {
			c()
		}
	}()
	if addr == "" {
		in := io.NopCloser(stdio.In)
		out := nopWriteCloser{stdio.Out}
		if of, ok := stdio.Out.(*os.File); ok && of == os.Stdout {
			claimed, err := acp.ClaimStdout()
			if err != nil {
				log.Warn("mcp serve: cannot protect standard output; serving on it directly", "err", err)
			} else {
				defer claimed.Close()
				out = nopWriteCloser{claimed}
			}
		}
		err := srv.ServeStdio(ctx, in, out)
		if ctx.Err() != nil || errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	token := stdio.Env("DSH_MCP_TOKEN")
	if token == "" {
		var b [24]byte
		_, _ = rand.Read(b[:])
		token = hex.EncodeToString(b[:])
		fmt.Fprintf(stdio.Err, "dsh mcp serve: bearer token %s (set DSH_MCP_TOKEN to choose one)\n", token)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageErr("--http %s: %v", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler(token))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdio.Err, "dsh mcp serve: listening on http://%s/mcp\n", ln.Addr())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
