package permission

import "github.com/dshq/dsh/tool"

// forceAllow, when set, replaces every decision with an allow. Only a
// binary built with the dshtest build tag sets it (testswitch_dshtest.go),
// and only when DSH_TEST_PERMISSION=allow is in its environment: the
// sandbox's escape tests run attacks through the real binary with the
// parser's decision forced to allow, so that what stops them is the kernel
// and nothing else. A release build has no way to set it.
var forceAllow func(call tool.Call) (reason string, ok bool)
