package term

import (
	"testing"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/llm/pricing"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/settings"
)

// The footer and /cost price the session's usage from the app's table,
// here the "pricing" settings' price for the scripted model.
func TestCostInFooterAndCommand(t *testing.T) {
	ad := scripted.New(scripted.Text("hello"), scripted.Text("again"))
	price := pricing.Key.In(settings.LayerUser, "settings.json", map[string]pricing.Setting{"script/m": {Input: 1000, Output: 2000}})
	h := startUIWith(t, func(o *app.Options) {
		o.Config = testConfig(t, price, permission.Key.Flag("--permission-mode", permission.Settings{DefaultMode: string(permission.ModeBypass)}))
	}, useScript(t, ad))
	h.send("/model script/m\r")
	h.wait("model set to script/m")
	// 10 input tokens at $1000/M and 5 output at $2000/M: $0.02 a reply.
	h.send("hi\r")
	h.wait("hello", "$0.02")
	h.send("more\r")
	h.wait("again", "$0.04")
	h.send("/cost\r")
	h.wait("$0.04 this session (2 turns)", "script/m  $0.04", "in 20 · out 10", "per million tokens: $1000 in · $2000 out · $1000 cache read")
	h.exit()
}
