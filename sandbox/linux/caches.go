//go:build linux

package linux

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"

	"github.com/dshq/dsh/sandbox/linux/helper"
)

// cacheDirs are the private caches, below the cache directory.
var cacheDirs = []string{"go-build", "go-mod", "npm", "xdg"}

// prepareCaches makes the cache directory (the policy's, or one in the
// sandbox's private state that dies with dsh) and its subdirectories.
func prepareCaches(dir string) error {
	for _, sub := range cacheDirs {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return err
		}
	}
	return nil
}

// cacheEnv points the usual tools at the private caches: the Go build
// cache through the cache program (which reads the user's own cache for
// what it does not have), the Go module cache (filled from the user's
// module downloads first, then from the proxy the user set), npm's cache,
// and XDG_CACHE_HOME for the rest (pip among them). The user's caches are
// never written, so nothing a confined command does reaches an unconfined
// build through them.
func cacheEnv(env []string) map[string]string {
	get := lookupEnv(env)
	set := map[string]string{
		"GOCACHE":          helper.CacheMount + "/go-build",
		"GOCACHEPROG":      helper.ExeMount + " " + helper.GoCacheArg,
		"GOMODCACHE":       helper.CacheMount + "/go-mod",
		"npm_config_cache": helper.CacheMount + "/npm",
		"XDG_CACHE_HOME":   helper.CacheMount + "/xdg",
	}
	if seed := goEnvValue(get, "GOCACHE"); seed != "" && seed != "off" && filepath.IsAbs(seed) {
		set[helper.EnvGoCacheSeed] = seed
	}
	if mod := goEnvValue(get, "GOMODCACHE"); mod != "" && filepath.IsAbs(mod) {
		downloads := filepath.Join(mod, "cache", "download")
		if fi, err := os.Stat(downloads); err == nil && fi.IsDir() {
			upstream := goEnvValue(get, "GOPROXY")
			proxy := "file://" + filepath.ToSlash(downloads)
			if upstream != "off" {
				proxy += "," + upstream
			}
			set["GOPROXY"] = proxy
		}
	}
	return set
}

// lookupEnv returns a lookup in env (later entries win, as exec does).
func lookupEnv(env []string) func(string) string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(k string) string { return m[k] }
}

// goEnvValue is what `go env NAME` would say for the command's
// environment, for the few variables the caches need: the environment,
// then the go env file (go env -w), then the go command's default. It
// runs no go command: this is on the path of every sandboxed command.
func goEnvValue(get func(string) string, name string) string {
	if v := get(name); v != "" {
		return v
	}
	if v := goEnvFile(get)[name]; v != "" {
		return v
	}
	home := get("HOME")
	switch name {
	case "GOCACHE":
		if x := get("XDG_CACHE_HOME"); x != "" {
			return filepath.Join(x, "go-build")
		}
		if home != "" {
			return filepath.Join(home, ".cache", "go-build")
		}
	case "GOMODCACHE":
		gopath := get("GOPATH")
		if gopath == "" {
			gopath = goEnvFile(get)["GOPATH"]
		}
		if gopath == "" && home != "" {
			gopath = filepath.Join(home, "go")
		}
		if first, _, _ := strings.Cut(gopath, string(os.PathListSeparator)); first != "" {
			return filepath.Join(first, "pkg", "mod")
		}
	case "GOPROXY":
		return "https://proxy.golang.org,direct"
	}
	return ""
}

// goEnvFile reads the go env file (GOENV, default $XDG_CONFIG_HOME/go/env
// or ~/.config/go/env).
func goEnvFile(get func(string) string) map[string]string {
	path := get("GOENV")
	if path == "off" {
		return nil
	}
	if path == "" {
		cfg := get("XDG_CONFIG_HOME")
		if cfg == "" && get("HOME") != "" {
			cfg = filepath.Join(get("HOME"), ".config")
		}
		if cfg == "" {
			return nil
		}
		path = filepath.Join(cfg, "go", "env")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok && k != "" && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	return out
}
