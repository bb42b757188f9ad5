package linux

import "github.com/dshq/dsh/sandbox/linux/helper"

// Main runs the helper, or one of its stages, when this process was
// started as one, and exits; otherwise it returns at once. Call it first
// thing in main (and in TestMain of packages whose tests start sandboxed
// commands from the test binary). It is [helper.Main]: programs that only
// ever run as the helper (cmd/dsh-sandbox-helper) call that directly and
// link none of this package.
func Main() { helper.Main() }
