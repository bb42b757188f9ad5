package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// CacheDir is the directory under $DSH_HOME that holds each server's last
// tool list (<server>.json), so lazy servers register their tools without
// starting.
const CacheDir = "mcp-cache"

const cacheVersion = 1

// cacheEntry is one server's cached tool list.
type cacheEntry struct {
	Version      int          `json:"version"`
	Server       string       `json:"server"`
	Fingerprint  string       `json:"fingerprint"`
	SavedAt      time.Time    `json:"savedAt"`
	Instructions string       `json:"instructions,omitempty"`
	Tools        []cachedTool `json:"tools"`
}

// cachedTool keeps what the registry needs of a tool; the input schema is
// stored normalized, so loading it needs no re-encoding.
type cachedTool struct {
	Name        string               `json:"name"`
	Title       string               `json:"title,omitempty"`
	Description string               `json:"description,omitempty"`
	InputSchema json.RawMessage      `json:"inputSchema"`
	Annotations *sdk.ToolAnnotations `json:"annotations,omitempty"`
}

func (e *cacheEntry) tools() []*sdk.Tool {
	out := make([]*sdk.Tool, 0, len(e.Tools))
	for _, t := range e.Tools {
		out = append(out, &sdk.Tool{Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: rawSchema(t.InputSchema), Annotations: t.Annotations})
	}
	return out
}

func cachePath(home, server string) string {
	return filepath.Join(home, CacheDir, toolPart(server)+".json")
}

// loadCache returns the cached list of a server, or nil when there is none
// or it was written for another command or endpoint.
func loadCache(home string, c ServerConfig) (*cacheEntry, error) {
	if home == "" {
		return nil, nil
	}
	b, err := os.ReadFile(cachePath(home, c.Name))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var e cacheEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("mcp: tool cache %s: %w", cachePath(home, c.Name), err)
	}
	if e.Version != cacheVersion || e.Fingerprint != c.fingerprint() || e.Server != c.Name {
		return nil, nil
	}
	return &e, nil
}

// saveCache writes a server's tool list atomically.
func saveCache(home string, c ServerConfig, tools []*sdk.Tool, instructions string, now time.Time) error {
	if home == "" {
		return nil
	}
	dir := filepath.Join(home, CacheDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ct := make([]cachedTool, 0, len(tools))
	for _, t := range tools {
		ct = append(ct, cachedTool{Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: inputSchema(t.InputSchema), Annotations: t.Annotations})
	}
	b, err := json.MarshalIndent(cacheEntry{Version: cacheVersion, Server: c.Name, Fingerprint: c.fingerprint(),
		SavedAt: now.UTC(), Instructions: instructions, Tools: ct}, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), cachePath(home, c.Name)); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
