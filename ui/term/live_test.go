package term

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
)

// useScript registers a scripted model as script/m; the test switches to
// it with /model.
func useScript(t *testing.T, ad *scripted.Adapter) func(*app.App) {
	return func(a *app.App) {
		if _, err := a.Host.LLM.Register([]llm.ModelInfo{{ID: "script/m", ContextWindow: 10000}}, ad); err != nil {
			t.Fatal(err)
		}
	}
}

// A running command's card shows the end of its output while it runs.
func TestLiveOutputWhileACommandRuns(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	cmd := "for i in 1 2 3 4 5 6 7; do echo tick $i; done; while [ ! -e " + gate + " ]; do sleep 0.05; done; echo finished"
	ad := scripted.New(scripted.Call("c1", "bash", map[string]string{"command": cmd, "description": "Tick"}, ""), scripted.Text("all done"))
	h := startUI(t, useScript(t, ad))
	h.send("/model script/m\r")
	h.wait("model set to script/m")
	h.send("go\r")
	// The tail, while it runs: the last lines and how many came before.
	h.wait("running", "… +2 lines", "tick 3", "tick 7")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.wait("● Bash", "finished", "all done", "✻ ")
	h.exit()
}
