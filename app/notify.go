package app

import (
	"fmt"

	"github.com/dshq/dsh/settings"
)

// Notifications is "notifications": how the terminal tells the user that a
// long turn finished while they looked elsewhere.
type Notifications struct {
	// Channel is "auto" (the default: OSC 9 where the terminal shows it as
	// a desktop notification, OSC 777 on VTE terminals and foot, else the
	// bell), "bell", "osc9", "osc777" or "off".
	Channel string `json:"channel,omitempty"`
	// AfterSeconds is how long a turn must have run to be announced
	// (default 10; 0 announces every turn).
	AfterSeconds *float64 `json:"afterSeconds,omitempty"`
	// InTmux announces inside tmux too (off by default: every pane of a
	// session would ring); OSC notifications then go through tmux's
	// passthrough, which needs "set -g allow-passthrough on".
	InTmux bool `json:"inTmux,omitempty"`
}

// NotificationsKey is the "notifications" settings key.
var NotificationsKey = settings.Key[Notifications]{Name: "notifications", Validate: func(n Notifications) error {
	switch n.Channel {
	case "", "auto", "bell", "osc9", "osc777", "off":
	default:
		return settings.Invalid("channel", "unknown channel %q (auto, bell, osc9, osc777 or off)", n.Channel)
	}
	if n.AfterSeconds != nil && *n.AfterSeconds < 0 {
		return fmt.Errorf("afterSeconds must not be negative")
	}
	return nil
}}
