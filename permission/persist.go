package permission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/dshq/dsh/internal/private"
)

// LocalSettingsFile is where "always for this project" keeps its rules:
// the project's local settings layer (.dsh/settings.local.json), which
// holds the user's own choices for the project and is not meant to be
// committed.
func LocalSettingsFile(project string) string {
	return filepath.Join(project, ".dsh", "settings.local.json")
}

// SaveRule adds r to the permissions of the settings file at path (its
// allow, ask or deny list), keeping everything else the file says, and
// then to the checker's process-wide rules with the file as its source,
// so it holds at once and, when the file's layer is loaded, after a
// restart. A rule the file already lists is not added twice. A file that
// is not a JSON object is left alone: the error says why.
func (c *Checker) SaveRule(path string, r Rule) error {
	if _, err := parseRule(r, c.home); err != nil {
		return err
	}
	if err := saveRule(path, r); err != nil {
		return fmt.Errorf("permission: saving %s to %s: %w", r.Text, path, err)
	}
	r.Source = path
	for _, have := range c.Rules("") {
		if have == r {
			return nil
		}
	}
	return c.AddRule(r)
}

func saveRule(path string, r Rule) error {
	doc := map[string]json.RawMessage{}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case len(bytes.TrimSpace(b)) > 0:
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("the file is not a JSON object (%v); fix it first", err)
		}
	}
	perms := map[string]json.RawMessage{}
	if raw, ok := doc["permissions"]; ok {
		if err := json.Unmarshal(raw, &perms); err != nil {
			return fmt.Errorf("its permissions are not an object (%v); fix it first", err)
		}
	}
	key := string(r.Behavior)
	var list []string
	if raw, ok := perms[key]; ok {
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("its permissions.%s is not a list of rules (%v); fix it first", key, err)
		}
	}
	if slices.Contains(list, r.Text) {
		return nil
	}
	list = append(list, r.Text)
	if perms[key], err = json.Marshal(list); err != nil {
		return err
	}
	if doc["permissions"], err = json.Marshal(perms); err != nil {
		return err
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := private.MkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	return private.WriteFile(path, append(out, '\n'))
}
