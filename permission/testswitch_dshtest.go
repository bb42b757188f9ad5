//go:build dshtest

package permission

import (
	"os"

	"github.com/dshq/dsh/tool"
)

func init() {
	if os.Getenv("DSH_TEST_PERMISSION") != "allow" {
		return
	}
	forceAllow = func(tool.Call) (string, bool) {
		return "test switch DSH_TEST_PERMISSION=allow (a dshtest build): every call is allowed", true
	}
}
