// Command acpmain serves dsh's ACP server without the rest of the dsh
// command (no terminal UI linked in). The benchmarks use it to separate
// the server's own start-up cost from the binary's package initialization.
package main

import (
	"context"
	"os"

	"github.com/dshq/dsh/acp"
)

func main() {
	home := os.Getenv("DSH_HOME")
	cwd, _ := os.Getwd()
	if err := acp.Serve(context.Background(), os.Stdin, os.Stdout, acp.Options{Home: home, Cwd: cwd, Version: "bench"}); err != nil {
		os.Exit(1)
	}
}
