package subagent

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Definition is a custom agent from an agents/*.md file: front matter with
// name, description, tools and model; the body is its system prompt.
type Definition struct {
	Name        string
	Description string
	Tools       []string
	Model       string
	Prompt      string
	Path        string
}

// LoadDefinitions reads *.md files from dirs in order; a later directory's
// definition of the same name wins (project over user). Files without a
// name fall back to the file name.
func LoadDefinitions(dirs ...string) ([]Definition, error) {
	byName := map[string]Definition{}
	var errs []error
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
				continue
			}
			path := filepath.Join(dir, e.Name())
			d, err := parseDefinition(path)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			byName[d.Name] = d
		}
	}
	out := make([]Definition, 0, len(byName))
	for _, d := range byName {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(errs...)
}

func parseDefinition(path string) (Definition, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Definition{}, err
	}
	d := Definition{Name: strings.TrimSuffix(filepath.Base(path), ".md"), Path: path}
	text := string(b)
	if strings.HasPrefix(text, "---\n") {
		end := strings.Index(text[4:], "\n---")
		if end < 0 {
			return Definition{}, fmt.Errorf("subagent: %s: front matter is not closed with ---", path)
		}
		front := text[4 : 4+end]
		text = strings.TrimPrefix(text[4+end+4:], "\n")
		sc := bufio.NewScanner(strings.NewReader(front))
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			v = strings.Trim(strings.TrimSpace(v), `"'`)
			switch strings.TrimSpace(k) {
			case "name":
				d.Name = v
			case "description":
				d.Description = v
			case "model":
				d.Model = v
			case "tools":
				v = strings.Trim(v, "[]")
				for _, t := range strings.Split(v, ",") {
					if t = strings.Trim(strings.TrimSpace(t), `"'`); t != "" {
						d.Tools = append(d.Tools, t)
					}
				}
			}
		}
	}
	d.Prompt = strings.TrimSpace(text)
	return d, nil
}
