// Package settings is dsh's configuration pipeline: settings files →
// layered merge → trust filter → command-line flags → one validated,
// immutable [Config] that each capability reads its own part of.
//
// The layers, lowest first: user ($DSH_HOME/settings.json) < project
// (.dsh/settings.json) < local (.dsh/settings.local.json) < an explicit
// --settings file < command-line flags. Every top-level key belongs to the
// capability that reads it: the capability declares it as a [Key] of its
// own config type (compact.Settings, permission.Settings, …), and the
// application passes the keys of its plugins as the [Schema]. Decoding is
// strict: an unknown key or a value of the wrong type is reported with the
// file, the key path and the reason, and dsh refuses to start on it — a
// typo in a permission rule must never silently widen what the agent may
// do.
//
// The package is a leaf: it imports no dsh capability (a test asserts it),
// so every capability, the front doors and embedders can use it.
package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Layer names where a settings value came from. It is the one list of
// layer names: permission rules, MCP server sources and warnings name
// layers with these values.
type Layer string

// Layers, lowest first.
const (
	// LayerUser is $DSH_HOME/settings.json.
	LayerUser Layer = "user"
	// LayerProject is <project>/.dsh/settings.json, part of the repository.
	LayerProject Layer = "project"
	// LayerLocal is <project>/.dsh/settings.local.json, beside it.
	LayerLocal Layer = "local"
	// LayerSettingsFile is the file named by --settings (it was called
	// "flag", a word that now means only command-line flags: LayerCLI).
	LayerSettingsFile Layer = "settings-file"
	// LayerCLI is command-line flags (--model, --allowedTools, …) and what
	// a front door's user chose for one session (ACP's additional
	// directories); the File's Path names the flag.
	LayerCLI Layer = "cli"
)

// Project reports whether the layer lives in the project's repository,
// which someone else may have written: it applies only once the user
// trusts the project, and it can never choose what only the user may
// (bypassPermissions, where sessions are stored).
func (l Layer) Project() bool { return l == LayerProject || l == LayerLocal }

// File is one layer: a settings file that was read, or the values of
// command-line flags (Path is then the flag, "--allowedTools"). It holds
// each top-level key's JSON, already validated against its [Key].
type File struct {
	Layer Layer
	Path  string
	// From names the tool whose file this is when it is not dsh's own
	// ("Claude Code" for .claude/settings.json); see [Foreign].
	From string
	keys map[string]json.RawMessage
}

// Has reports whether the file sets key.
func (f File) Has(key string) bool {
	_, ok := f.keys[key]
	return ok
}

// Keys lists the top-level keys the file sets, sorted.
func (f File) Keys() []string {
	out := make([]string, 0, len(f.keys))
	for k := range f.keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Error is a problem in a settings file (or in a flag's value).
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
	Home         string // $DSH_HOME
	Project      string // the working directory
	SettingsFile string // --settings
}

// Files returns the candidate files in layer order.
func (p Paths) Files() []File {
	var out []File
	if p.Home != "" {
		out = append(out, File{Layer: LayerUser, Path: filepath.Join(p.Home, "settings.json")})
	}
	if p.Project != "" {
		out = append(out,
			File{Layer: LayerProject, Path: filepath.Join(p.Project, ".dsh", "settings.json")},
			File{Layer: LayerLocal, Path: filepath.Join(p.Project, ".dsh", "settings.local.json")})
	}
	if p.SettingsFile != "" {
		out = append(out, File{Layer: LayerSettingsFile, Path: p.SettingsFile})
	}
	return out
}

// Schema is the set of keys an application knows: the keys of its
// plugins. A key no section claims is an error.
type Schema []Section

func (s Schema) index() (map[string]Section, error) {
	m := make(map[string]Section, len(s))
	for _, sec := range s {
		if _, dup := m[sec.Key()]; dup {
			return nil, fmt.Errorf("settings: key %q is declared twice", sec.Key())
		}
		m[sec.Key()] = sec
	}
	return m, nil
}

// Foreign is another tool's settings file read as a layer of dsh's
// pipeline: Claude Code's .claude/settings.json holds permissions and env
// that mean the same in dsh. Convert maps the file's contents onto dsh's
// keys (validated like any layer) and names what it leaves out. These
// files are not dsh's to validate strictly: a key dsh does not use is a
// note in the log, and a file that cannot be read or converted is skipped
// with a warning rather than stopping dsh.
type Foreign struct {
	Layer Layer
	Path  string
	// From names the tool ("Claude Code").
	From    string
	Convert func(b []byte) (Converted, error)
}

// Converted is a foreign file mapped onto dsh's keys.
type Converted struct {
	// Keys are dsh top-level keys and their values.
	Keys map[string]json.RawMessage
	// Notes name what dsh does not use ("model: dsh names models …"),
	// for the log and dsh doctor.
	Notes []string
	// Warnings are what the user must see (a deny rule dsh reads more
	// broadly than written).
	Warnings []string
}

// Note is something a foreign settings file sets that dsh does not use.
type Note struct {
	Path string
	Text string
}

// Input is what the pipeline starts from.
type Input struct {
	Paths
	// Foreign are other tools' settings files; each is placed just below
	// dsh's own file of the same layer (Claude Code's user file below
	// $DSH_HOME/settings.json, and so on), so dsh's file wins where both
	// set a value.
	Foreign []Foreign
	// Flags are the command-line layers, applied last in order (build them
	// with [Key.Flag]).
	Flags []File
	// Trust decides whether the project's own layers apply; it may ask the
	// user and record the answer. It is called only when Project is set.
	// Nil: they never apply.
	Trust func(project string) (bool, error)
	// Schema is every key the application reads.
	Schema Schema
}

// Load runs the pipeline: it reads every existing layer (a missing user,
// project or local file is fine; a missing --settings file is an error),
// validates each file against the schema, drops the project's layers
// unless Trust says they apply, adds the flag layers, and lets each key's
// layer policy strip what a layer may not choose (with a warning).
func Load(in Input) (*Config, error) {
	idx, err := in.Schema.index()
	if err != nil {
		return nil, err
	}
	c := &Config{project: in.Project, schema: idx}
	for _, f := range in.Paths.Files() {
		for _, fo := range in.Foreign {
			if fo.Layer == f.Layer {
				c.foreign(idx, fo)
			}
		}
		b, err := os.ReadFile(f.Path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && f.Layer != LayerSettingsFile {
				continue
			}
			return nil, &Error{Path: f.Path, Reason: err.Error()}
		}
		f.keys, err = decodeFile(idx, f.Path, b)
		if err != nil {
			return nil, err
		}
		c.files = append(c.files, f)
	}
	if in.Project == "" {
		// No project: the foreign files of layers Paths did not list.
		for _, fo := range in.Foreign {
			if fo.Layer == LayerUser && in.Paths.Home == "" {
				c.foreign(idx, fo)
			}
		}
	}
	if in.Project != "" && in.Trust != nil {
		ok, err := in.Trust(in.Project)
		if err != nil {
			return nil, fmt.Errorf("settings: project trust: %w", err)
		}
		c.trusted = ok
	}
	if !c.trusted {
		c.files = slices.DeleteFunc(c.files, func(f File) bool {
			if f.Layer.Project() {
				c.ignored = append(c.ignored, f)
				return true
			}
			return false
		})
	}
	for _, f := range in.Flags {
		if err := c.check(f); err != nil {
			return nil, err
		}
		c.files = append(c.files, f)
	}
	if err := c.applyPolicies(0); err != nil {
		return nil, err
	}
	return c, nil
}

// foreign reads one foreign file as a layer; a missing file is fine, any
// other problem skips it with a warning.
func (c *Config) foreign(idx map[string]Section, fo Foreign) {
	b, err := os.ReadFile(fo.Path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.warnings = append(c.warnings, fmt.Sprintf("settings: %s: cannot be read, skipped: %v", fo.Path, err))
		}
		return
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return
	}
	conv, err := fo.Convert(b)
	if err != nil {
		c.warnings = append(c.warnings, fmt.Sprintf("settings: %s: skipped: %v", fo.Path, err))
		c.skipped = append(c.skipped, Note{Path: fo.Path, Text: err.Error()})
		return
	}
	f := File{Layer: fo.Layer, Path: fo.Path, From: fo.From, keys: map[string]json.RawMessage{}}
	for k, raw := range conv.Keys {
		sec, ok := idx[k]
		if !ok {
			continue // a key this application does not read
		}
		if e := sec.check(fo.Path, raw); e != nil {
			c.warnings = append(c.warnings, "settings: "+strings.TrimPrefix(e.Error(), "settings: ")+" (skipped)")
			continue
		}
		f.keys[k] = raw
	}
	for _, n := range conv.Notes {
		c.notes = append(c.notes, Note{Path: fo.Path, Text: n})
	}
	for _, w := range conv.Warnings {
		c.warnings = append(c.warnings, fo.Path+": "+w)
	}
	c.files = append(c.files, f)
}

// decodeFile splits one file into its top-level keys and validates each.
func decodeFile(idx map[string]Section, path string, b []byte) (map[string]json.RawMessage, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var probe json.RawMessage
	if err := dec.Decode(&probe); err != nil {
		return nil, &Error{Path: path, Reason: "not valid JSON: " + describeSyntax(b, err)}
	}
	if dec.More() {
		return nil, &Error{Path: path, Reason: "not valid JSON: extra data after the settings object"}
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(probe, &keys); err != nil || keys == nil {
		return nil, &Error{Path: path, Reason: "the settings must be a JSON object"}
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		sec, ok := idx[k]
		if !ok {
			return nil, unknownKey(path, k, idx)
		}
		if err := sec.check(path, keys[k]); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func unknownKey(path, k string, idx map[string]Section) *Error {
	known := make([]string, 0, len(idx))
	for n := range idx {
		known = append(known, n)
	}
	sort.Strings(known)
	reason := "unknown key"
	if s := suggest(k, known); s != "" {
		reason += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return &Error{Path: path, Key: k, Reason: reason}
}

func describeSyntax(b []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(b[:min(int(se.Offset), len(b))], []byte("\n"))
		return fmt.Sprintf("%v (line %d)", se, line)
	}
	return err.Error()
}

// Config is the validated, immutable configuration of one project: the
// layers in force, in order. Capabilities read their part through their
// [Key]; each read decodes afresh, so no reader can change what another
// sees. A Config is safe for concurrent use.
type Config struct {
	project  string
	trusted  bool
	files    []File
	ignored  []File
	warnings []string
	notes    []Note
	skipped  []Note
	schema   map[string]Section
}

// Project is the project directory the configuration was loaded for (""
// when none: only the user's layers and flags).
func (c *Config) Project() string { return c.project }

// Trusted reports whether the project's own layers apply (the user trusts
// the project). It also says whether the project's other configuration
// (hooks, MCP servers) may take effect.
func (c *Config) Trusted() bool { return c.trusted }

// Files returns the layers in force, lowest first.
func (c *Config) Files() []File { return slices.Clone(c.files) }

// Ignored returns the project layers the trust filter dropped.
func (c *Config) Ignored() []File { return slices.Clone(c.ignored) }

// Notes are what foreign settings files set that dsh does not use, by
// file (for the log and dsh doctor).
func (c *Config) Notes() []Note { return slices.Clone(c.notes) }

// Skipped are the foreign settings files that could not be used (not
// valid JSON), with why.
func (c *Config) Skipped() []Note { return slices.Clone(c.skipped) }

// Warnings are what the layer policies stripped ("a project cannot choose
// bypassPermissions"), for the front door to show.
func (c *Config) Warnings() []string { return slices.Clone(c.warnings) }

// With returns a copy with more layers on top (validated like flags): a
// front door adds what its user chose for one session.
func (c *Config) With(files ...File) (*Config, error) {
	out := *c
	out.files = slices.Clone(c.files)
	out.warnings = slices.Clone(c.warnings)
	out.notes, out.skipped = slices.Clone(c.notes), slices.Clone(c.skipped)
	from := len(out.files)
	for _, f := range files {
		if err := out.check(f); err != nil {
			return nil, err
		}
		out.files = append(out.files, f)
	}
	if err := out.applyPolicies(from); err != nil {
		return nil, err
	}
	return &out, nil
}

// check validates a layer built in code (a flag) against the schema.
func (c *Config) check(f File) error {
	names := f.Keys()
	for _, k := range names {
		sec, ok := c.schema[k]
		if !ok {
			return unknownKey(f.Path, k, c.schema)
		}
		if err := sec.check(f.Path, f.keys[k]); err != nil {
			return err
		}
	}
	return nil
}

// applyPolicies lets each key strip what a layer may not choose, in the
// layers from index from on.
func (c *Config) applyPolicies(from int) error {
	var warnings []string
	for i := from; i < len(c.files); i++ {
		f := c.files[i]
		for _, k := range f.Keys() {
			sec, ok := c.schema[k]
			if !ok {
				continue
			}
			raw, warn, err := sec.police(f, f.keys[k])
			if err != nil {
				return err
			}
			if warn == "" {
				continue
			}
			warnings = append(warnings, warn)
			keys := make(map[string]json.RawMessage, len(f.keys))
			for kk, v := range f.keys {
				keys[kk] = v
			}
			if raw == nil {
				delete(keys, k)
			} else {
				keys[k] = raw
			}
			c.files[i].keys = keys
			f = c.files[i]
		}
	}
	c.warnings = append(c.warnings, warnings...)
	return nil
}

// Empty is a configuration with no layers: every key reads as its zero
// value (embedders and tests that configure capabilities in code).
func Empty() *Config { return &Config{schema: map[string]Section{}} }

// From builds a configuration from layers built in code (tests, embedders
// that keep settings elsewhere), validated against schema, as if they had
// been read from files.
func From(schema Schema, trusted bool, files ...File) (*Config, error) {
	idx, err := schema.index()
	if err != nil {
		return nil, err
	}
	c := &Config{schema: idx, trusted: trusted}
	for _, f := range files {
		if f.Layer.Project() && !trusted {
			c.ignored = append(c.ignored, f)
			continue
		}
		if err := c.check(f); err != nil {
			return nil, err
		}
		c.files = append(c.files, f)
	}
	if err := c.applyPolicies(0); err != nil {
		return nil, err
	}
	return c, nil
}

// Parse decodes one layer's JSON text (a settings file's contents), for
// [From].
func Parse(schema Schema, layer Layer, path string, text []byte) (File, error) {
	idx, err := schema.index()
	if err != nil {
		return File{}, err
	}
	keys, err := decodeFile(idx, path, text)
	if err != nil {
		return File{}, err
	}
	return File{Layer: layer, Path: path, keys: keys}, nil
}

// Describe renders the configuration for diagnostics: each layer in
// force with its keys, and the project layers the trust filter dropped.
func (c *Config) Describe() []string {
	var out []string
	for _, f := range c.files {
		out = append(out, fmt.Sprintf("%s %s: %s", f.Layer, f.Path, strings.Join(f.Keys(), ", ")))
	}
	for _, f := range c.ignored {
		out = append(out, fmt.Sprintf("%s %s: ignored until you trust the project", f.Layer, f.Path))
	}
	return out
}
