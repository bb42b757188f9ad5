// Command dsh is the dsh coding agent. Everything lives in package cli;
// this file only wires the process to it.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/dshq/dsh/cli"
	"github.com/dshq/dsh/internal/memlimit"
	"github.com/dshq/dsh/sandbox/linux"
)

func main() {
	// The sandbox helper is this binary re-executed: it must run before
	// anything else (see sandbox/linux).
	linux.Main()
	// Before anything reads a secret: the commands dsh runs must not be
	// able to read them back from /proc (see harden).
	if err := harden(); err != nil {
		fmt.Fprintln(os.Stderr, "dsh: warning: cannot protect the process from inspection:", err)
	}
	// A soft memory limit unless GOMEMLIMIT sets one: the garbage of a
	// long session's large outputs is collected before it piles up.
	memlimit.Apply(os.Getenv, memlimit.Default)
	if path := os.Getenv(memlimit.ProfileEnv); path != "" {
		go memlimit.WriteProfiles(path, 2*time.Second)
	}
	os.Exit(cli.Main(os.Args[1:], cli.IO{
		In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
		Interactive: cli.IsTerminal(os.Stdin) && cli.IsTerminal(os.Stdout),
		InTerminal:  cli.IsTerminal(os.Stdin),
	}))
}
