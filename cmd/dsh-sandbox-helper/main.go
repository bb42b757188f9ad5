// Command dsh-sandbox-helper is the kernel sandbox's helper on its own:
// the process between dsh and each sandboxed command. dsh runs itself as
// the helper unless this program sits next to it, from the same build;
// it is a tenth of dsh's size and starts in about a third of the time
// (dsh's start-up is its 299 packages' initialisation and page faults),
// which is most of what a sandboxed command costs over a plain one. See
// docs/benchmarks.md.
package main

import (
	"fmt"
	"os"

	"github.com/dshq/dsh/sandbox/linux/helper"
)

func main() {
	helper.Main() // exits when started as the helper
	fmt.Fprintln(os.Stderr, "dsh-sandbox-helper: dsh starts this program itself (install it next to dsh); it takes no commands")
	os.Exit(2)
}
