//go:build linux

package linux

import (
	"os"
	"testing"

	"github.com/dshq/dsh/sandbox"
)

func TestMain(m *testing.M) {
	Main() // the probe re-executes this test binary as the helper
	os.Exit(m.Run())
}

// TestStatusTellsTheTruth: with each layer switched off, the status says
// so, names the switch, and claims enforcement only while every required
// layer is still active. With nothing switched off, this machine (kernel
// 6.18, root) enforces everything.
func TestStatusTellsTheTruth(t *testing.T) {
	full := New(Options{}).Status()
	if !full.Enforcing {
		t.Skipf("the sandbox does not enforce here: %s", full.Reason)
	}
	for _, l := range full.Layers {
		if !l.Active {
			t.Errorf("layer %s inactive on an enforcing machine: %s", l.Name, l.Detail)
		}
	}
	requiredLayer := map[string]bool{sandbox.LayerMountNS: true, sandbox.LayerNetNS: true, sandbox.LayerLandlock: true, sandbox.LayerSeccomp: true}
	for _, sw := range []string{"userns", "mountns", "netns", "pidns", "landlock", "seccomp"} {
		t.Run(sw, func(t *testing.T) {
			layers, err := sandbox.ParseDisable(sw)
			if err != nil {
				t.Fatal(err)
			}
			st := New(Options{Disable: layers}).Status()
			l, ok := st.Layer(layers[0])
			if !ok || l.Active || l.Detail != "disabled by DSH_SANDBOX_DISABLE" {
				t.Fatalf("layer %s: %+v", layers[0], l)
			}
			if want := !requiredLayer[layers[0]]; st.Enforcing != want {
				t.Fatalf("enforcing %v with %s off, want %v (%s)", st.Enforcing, layers[0], want, st.Reason)
			}
			if !st.Enforcing && st.Reason == "" {
				t.Fatal("not enforcing, and no reason given")
			}
		})
	}
}
