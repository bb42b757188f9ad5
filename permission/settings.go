package permission

import (
	"fmt"

	"github.com/dshq/dsh/settings"
)

// FromSettings gathers a Config from the settings files that were read (in
// layer order, as settings.Load returns them): every rule with the file it
// came from, the additional directories, and the mode of the last layer
// that sets one. A bypassPermissions mode from a project or local file is
// skipped with a warning and the mode of the layer below applies, so a
// repository can never switch prompts off. Home and Cwd are left for the
// caller, as are rules and a mode from command-line flags (append them with
// Source SourceFlag and set ModeSource LayerCLI).
func FromSettings(sources []settings.Source) (Config, []string) {
	var cfg Config
	var warnings []string
	for _, src := range sources {
		p := src.Settings.Permissions
		if m := p.DefaultMode; m != "" {
			if Mode(m) == ModeBypass && !userChosen(src.Layer) {
				warnings = append(warnings, fmt.Sprintf("permission: %s sets defaultMode bypassPermissions, which only you can choose (--permission-mode or your user settings); ignored", src.Path))
			} else {
				cfg.Mode, cfg.ModeSource = Mode(m), src.Layer
			}
		}
		for _, list := range []struct {
			rules []string
			b     Behavior
		}{{p.Allow, Allow}, {p.Ask, Ask}, {p.Deny, Deny}} {
			for _, r := range list.rules {
				cfg.Rules = append(cfg.Rules, Rule{Text: r, Behavior: list.b, Source: src.Path})
			}
		}
		cfg.Roots = append(cfg.Roots, p.AdditionalDirectories...)
	}
	return cfg, warnings
}
