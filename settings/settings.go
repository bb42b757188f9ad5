// Package settings loads dsh's layered JSON settings: user
// (~/.dsh/settings.json) < project (.dsh/settings.json) < local
// (.dsh/settings.local.json) < an explicit --settings file. Decoding is
// strict: an unknown key or a value of the wrong type is reported with the
// file, the key path and the reason, and dsh refuses to start on it — a
// typo in a permission rule must never silently widen what the agent may
// do.
package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/dshq/dsh/compact"
	"github.com/dshq/dsh/llm/providers"
)

// Settings is the merged configuration.
type Settings struct {
	// Model is the default model reference ("provider/model" or an alias).
	Model     string                              `json:"model,omitempty"`
	Providers map[string]providers.ProviderConfig `json:"providers,omitempty"`
	Aliases   map[string]string                   `json:"aliases,omitempty"`
	// Permissions: rules and the default mode.
	Permissions Permissions `json:"permissions,omitempty"`
	// Hooks in Claude Code's format, by event name; kept raw here and
	// decoded by the hooks bridge.
	Hooks map[string]json.RawMessage `json:"hooks,omitempty"`
	// Env is added to the environment of tools and hooks.
	Env map[string]string `json:"env,omitempty"`
	// EnabledPlugins switches optional plugins on or off by name.
	EnabledPlugins map[string]bool `json:"enabledPlugins,omitempty"`
	// SystemPrompt is appended to every agent's system prompt.
	SystemPrompt string `json:"appendSystemPrompt,omitempty"`
	// MaxSteps bounds model calls per turn (0: no limit).
	MaxSteps int `json:"maxSteps,omitempty"`
	// Web configures web_fetch and web_search.
	Web *Web `json:"web,omitempty"`
	// Compaction tunes automatic context compaction.
	Compaction compact.Config `json:"compaction,omitempty"`
	// MCPServers configures Model Context Protocol servers by name.
	MCPServers map[string]json.RawMessage `json:"mcpServers,omitempty"`
	// SessionStore picks where sessions are stored: "jsonl" (the default,
	// one file per session) or "sqlite" (one database). A user setting:
	// see [SessionStore].
	SessionStore string `json:"sessionStore,omitempty"`
}

// Permissions configure what tools may do without asking.
type Permissions struct {
	DefaultMode           string   `json:"defaultMode,omitempty"`
	Allow                 []string `json:"allow,omitempty"`
	Ask                   []string `json:"ask,omitempty"`
	Deny                  []string `json:"deny,omitempty"`
	AdditionalDirectories []string `json:"additionalDirectories,omitempty"`
}

// Web configures the web tools.
type Web struct {
	AllowPrivateNetworks bool   `json:"allowPrivateNetworks,omitempty"`
	SearchProvider       string `json:"searchProvider,omitempty"`
	FetchProvider        string `json:"fetchProvider,omitempty"`
}

// Providers returns the model section in the adapters' shape.
func (s *Settings) ProvidersConfig() providers.Config {
	return providers.Config{Providers: s.Providers, DefaultModel: s.Model, Aliases: s.Aliases}
}

// Layer names.
const (
	LayerUser    = "user"
	LayerProject = "project"
	LayerLocal   = "local"
	LayerFlag    = "flag"
)

// Source is one settings file that was read.
type Source struct {
	Layer string
	Path  string
	// Settings is that file alone.
	Settings Settings
}

// Error is a problem in a settings file.
type Error struct {
	Path   string
	Key    string
	Reason string
}

func (e *Error) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("settings: %s: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("settings: %s: %s: %s", e.Path, e.Key, e.Reason)
}

// Paths locates the settings files of each layer.
type Paths struct {
	Home    string // $DSH_HOME
	Project string // the working directory
	Flag    string // --settings
}

// Files returns the candidate files in layer order.
func (p Paths) Files() []Source {
	var out []Source
	if p.Home != "" {
		out = append(out, Source{Layer: LayerUser, Path: filepath.Join(p.Home, "settings.json")})
	}
	if p.Project != "" {
		out = append(out,
			Source{Layer: LayerProject, Path: filepath.Join(p.Project, ".dsh", "settings.json")},
			Source{Layer: LayerLocal, Path: filepath.Join(p.Project, ".dsh", "settings.local.json")})
	}
	if p.Flag != "" {
		out = append(out, Source{Layer: LayerFlag, Path: p.Flag})
	}
	return out
}

// Load reads every existing layer and merges them. A missing user, project
// or local file is fine; a missing --settings file is an error.
func Load(p Paths) (Settings, []Source, error) {
	var merged Settings
	var read []Source
	for _, src := range p.Files() {
		b, err := os.ReadFile(src.Path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && src.Layer != LayerFlag {
				continue
			}
			return Settings{}, nil, &Error{Path: src.Path, Reason: err.Error()}
		}
		s, err := Decode(src.Path, b)
		if err != nil {
			return Settings{}, nil, err
		}
		src.Settings = s
		read = append(read, src)
		merged = Merge(merged, s)
	}
	return merged, read, nil
}

// Decode parses one file strictly.
func Decode(path string, b []byte) (Settings, error) {
	var s Settings
	if len(bytes.TrimSpace(b)) == 0 {
		return s, nil
	}
	var raw any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return s, &Error{Path: path, Reason: "not valid JSON: " + describeSyntax(b, err)}
	}
	if dec.More() {
		return s, &Error{Path: path, Reason: "not valid JSON: extra data after the settings object"}
	}
	if err := checkKeys(raw, reflect.TypeOf(s), ""); err != nil {
		err.Path = path
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return s, &Error{Path: path, Key: te.Field, Reason: fmt.Sprintf("expected %s, got %s", kindName(te.Type), te.Value)}
		}
		return s, &Error{Path: path, Reason: err.Error()}
	}
	if err := validate(&s); err != nil {
		err.Path = path
		return s, err
	}
	return s, nil
}

func describeSyntax(b []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(b[:min(int(se.Offset), len(b))], []byte("\n"))
		return fmt.Sprintf("%v (line %d)", se, line)
	}
	return err.Error()
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// checkKeys reports the first key that no field of t accepts.
func checkKeys(v any, t reflect.Type, path string) *Error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil // type errors are reported by Unmarshal
		}
		fields := map[string]reflect.StructField{}
		var names []string
		for i := range t.NumField() {
			f := t.Field(i)
			name := strings.Split(f.Tag.Get("json"), ",")[0]
			if name == "" || name == "-" {
				continue
			}
			fields[name] = f
			names = append(names, name)
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			f, ok := fields[k]
			p := join(path, k)
			if !ok {
				reason := "unknown key"
				if s := suggest(k, names); s != "" {
					reason += fmt.Sprintf(" (did you mean %q?)", s)
				}
				return &Error{Key: p, Reason: reason}
			}
			if err := checkKeys(obj[k], f.Type, p); err != nil {
				return err
			}
		}
	case reflect.Map:
		if t.Elem() == reflect.TypeOf(json.RawMessage(nil)) {
			return nil
		}
		if obj, ok := v.(map[string]any); ok {
			for k, x := range obj {
				if err := checkKeys(x, t.Elem(), join(path, k)); err != nil {
					return err
				}
			}
		}
	case reflect.Slice:
		if arr, ok := v.([]any); ok {
			for i, x := range arr {
				if err := checkKeys(x, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// suggest returns the closest known key within a small edit distance.
func suggest(k string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := distance(strings.ToLower(k), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev = cur
	}
	return prev[len(b)]
}

// Plugins are the optional plugins "enabledPlugins" can switch off.
var Plugins = []string{"web", "mcp", "subagents", "hooks"}

// Stores are the session stores "sessionStore" can name.
var Stores = []string{"jsonl", "sqlite"}

// Modes are the permission modes.
var Modes = []string{"default", "acceptEdits", "plan", "bypassPermissions"}

func validate(s *Settings) *Error {
	if m := s.Permissions.DefaultMode; m != "" && !contains(Modes, m) {
		return &Error{Key: "permissions.defaultMode", Reason: fmt.Sprintf("unknown mode %q (want one of %s)", m, strings.Join(Modes, ", "))}
	}
	for name := range s.EnabledPlugins {
		if !contains(Plugins, name) {
			return &Error{Key: "enabledPlugins." + name, Reason: fmt.Sprintf("unknown plugin (known: %s)", strings.Join(Plugins, ", "))}
		}
	}
	if st := s.SessionStore; st != "" && !contains(Stores, st) {
		return &Error{Key: "sessionStore", Reason: fmt.Sprintf("unknown session store %q (want one of %s)", st, strings.Join(Stores, ", "))}
	}
	if s.MaxSteps < 0 {
		return &Error{Key: "maxSteps", Reason: "must not be negative"}
	}
	for name, p := range s.Providers {
		if p.Type != "" && p.Type != providers.TypeOpenAI && p.Type != providers.TypeAnthropic {
			return &Error{Key: "providers." + name + ".type", Reason: fmt.Sprintf("unknown provider type %q (want openai or anthropic)", p.Type)}
		}
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Merge overlays b on a: scalars in b win when set, maps merge by key, rule
// lists concatenate.
func Merge(a, b Settings) Settings {
	if b.Model != "" {
		a.Model = b.Model
	}
	a.Providers = mergeMap(a.Providers, b.Providers)
	a.Aliases = mergeMap(a.Aliases, b.Aliases)
	a.Env = mergeMap(a.Env, b.Env)
	a.EnabledPlugins = mergeMap(a.EnabledPlugins, b.EnabledPlugins)
	a.MCPServers = mergeMap(a.MCPServers, b.MCPServers)
	if a.Hooks == nil && b.Hooks != nil {
		a.Hooks = map[string]json.RawMessage{}
	}
	for ev, raw := range b.Hooks {
		a.Hooks[ev] = concatJSONArrays(a.Hooks[ev], raw)
	}
	if b.Permissions.DefaultMode != "" {
		a.Permissions.DefaultMode = b.Permissions.DefaultMode
	}
	a.Permissions.Allow = append(a.Permissions.Allow, b.Permissions.Allow...)
	a.Permissions.Ask = append(a.Permissions.Ask, b.Permissions.Ask...)
	a.Permissions.Deny = append(a.Permissions.Deny, b.Permissions.Deny...)
	a.Permissions.AdditionalDirectories = append(a.Permissions.AdditionalDirectories, b.Permissions.AdditionalDirectories...)
	if b.SystemPrompt != "" {
		a.SystemPrompt = joinText(a.SystemPrompt, b.SystemPrompt)
	}
	if b.MaxSteps != 0 {
		a.MaxSteps = b.MaxSteps
	}
	if b.Compaction != (compact.Config{}) {
		a.Compaction = b.Compaction
	}
	if b.Web != nil {
		a.Web = b.Web
	}
	if b.SessionStore != "" {
		a.SessionStore = b.SessionStore
	}
	return a
}

// SessionStore returns the session store the user chose ("jsonl" unless
// set). Only the user's own files count (the user layer and --settings):
// every session of the machine lives in one store, which a project must
// not be able to move, so a project or local file that sets it gets a
// warning instead.
func SessionStore(sources []Source) (store string, warnings []string) {
	store = "jsonl"
	for _, src := range sources {
		st := src.Settings.SessionStore
		switch {
		case st == "":
		case src.Layer == LayerUser || src.Layer == LayerFlag:
			store = st
		default:
			warnings = append(warnings, fmt.Sprintf("settings: ignoring sessionStore %q in %s: the session store is chosen in your user settings or --settings", st, src.Path))
		}
	}
	return store, warnings
}

func joinText(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n\n" + b
}

func mergeMap[V any](a, b map[string]V) map[string]V {
	if len(b) == 0 {
		return a
	}
	out := make(map[string]V, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// concatJSONArrays joins two JSON arrays (hook matcher lists); a non-array
// b replaces a.
func concatJSONArrays(a, b json.RawMessage) json.RawMessage {
	var xa, xb []json.RawMessage
	if json.Unmarshal(b, &xb) != nil {
		return b
	}
	if len(a) > 0 && json.Unmarshal(a, &xa) != nil {
		return b
	}
	out, _ := json.Marshal(append(xa, xb...))
	return out
}
