package doctor_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/dshq/dsh/doctor"
)

func TestRegistryGroupsAndReports(t *testing.T) {
	var r doctor.Registry
	r.Add("hooks", func(context.Context) []doctor.Finding {
		return []doctor.Finding{{Severity: doctor.Warning, Subject: "claude", Message: "skipping an http hook"}}
	})
	undo := r.Add("gone", func(context.Context) []doctor.Finding { return []doctor.Finding{{Message: "never"}} })
	r.Add("mcp", func(context.Context) []doctor.Finding {
		return []doctor.Finding{{Severity: doctor.Error, Subject: "server x", Message: "failed to start", Fix: "check it"}}
	})
	r.Add("hooks", func(context.Context) []doctor.Finding {
		return []doctor.Finding{{Severity: doctor.OK, Message: "2 hooks run"}}
	})
	r.Add("crash", func(context.Context) []doctor.Finding { panic("boom") })
	undo()
	fs := r.Run(context.Background())
	var caps []string
	for _, f := range fs {
		caps = append(caps, f.Capability)
	}
	if got := strings.Join(caps, ","); got != "hooks,hooks,mcp,crash" {
		t.Fatalf("order %s", got)
	}
	if doctor.Worst(fs) != doctor.Error || doctor.Worst(fs[:2]) != doctor.Warning || doctor.Worst(nil) != doctor.OK {
		t.Error("worst severity")
	}
	if fs[3].Severity != doctor.Error || !strings.Contains(fs[3].Message, "boom") {
		t.Errorf("a crashing check is an error finding: %+v", fs[3])
	}
	var b bytes.Buffer
	doctor.Print(&b, fs)
	for _, want := range []string{"hooks\n  warning claude: skipping an http hook", "mcp\n  error   server x: failed to start\n      → check it"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("print lacks %q:\n%s", want, b.String())
		}
	}
}
