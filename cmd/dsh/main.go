// Command dsh is the dsh coding agent. Everything lives in package cli;
// this file only wires the process to it.
package main

import (
	"os"

	"github.com/dshq/dsh/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], cli.IO{
		In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
		Interactive: cli.IsTerminal(os.Stdin) && cli.IsTerminal(os.Stdout),
	}))
}
