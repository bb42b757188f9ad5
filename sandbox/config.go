package sandbox

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Config is the "sandbox" section of settings.
type Config struct {
	// Mode is read-only, workspace-write or danger-full-access; empty means
	// workspace-write where the kernel enforces it.
	Mode string `json:"mode,omitempty"`
	// Network configures what sandboxed commands may reach.
	Network NetworkConfig `json:"network,omitzero"`
	// Limits are resource limits for sandboxed commands.
	Limits Limits `json:"limits,omitzero"`
	// Hooks runs hook commands sandboxed too (in the session's mode).
	Hooks bool `json:"hooks,omitempty"`
	// MCP runs stdio MCP servers sandboxed too.
	MCP bool `json:"mcp,omitempty"`
}

// NetworkConfig is sandbox.network.
type NetworkConfig struct {
	// Allow lists domains reachable through the filtering proxy:
	// "github.com" (that host only), "*.npmjs.org" (its subdomains), or an
	// IP address. A private or loopback destination is reached only when
	// an entry names it literally ("localhost", "127.0.0.1").
	Allow []string `json:"allow,omitempty"`
}

// Limits are rlimits applied to every process of a command.
type Limits struct {
	// AddressSpace caps each process's virtual memory (RLIMIT_AS).
	AddressSpace Size `json:"addressSpace,omitempty"`
	// Processes caps the user's processes (RLIMIT_NPROC).
	Processes int `json:"processes,omitempty"`
	// FileSize caps the size of a file a process writes (RLIMIT_FSIZE).
	FileSize Size `json:"fileSize,omitempty"`
	// CPUSeconds caps each process's CPU time (RLIMIT_CPU).
	CPUSeconds int `json:"cpuSeconds,omitempty"`
}

// Any reports whether some limit is set.
func (l Limits) Any() bool {
	return l.AddressSpace > 0 || l.Processes > 0 || l.FileSize > 0 || l.CPUSeconds > 0
}

// Size is a byte count written as a number or a string with a unit
// ("512MiB", "2G", "100k").
type Size int64

// UnmarshalJSON accepts a number or a string with a unit.
func (s *Size) UnmarshalJSON(b []byte) error {
	var n int64
	if err := json.Unmarshal(b, &n); err == nil {
		if n < 0 {
			return fmt.Errorf("size must not be negative")
		}
		*s = Size(n)
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return fmt.Errorf("size must be a number of bytes or a string such as \"2GiB\"")
	}
	v, err := ParseSize(str)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseSize reads "2GiB", "512M", "100k" or a plain number of bytes.
func ParseSize(str string) (Size, error) {
	t := strings.TrimSpace(str)
	mult := int64(1)
	lower := strings.ToLower(t)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
		{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1},
	} {
		if strings.HasSuffix(lower, u.suffix) {
			mult = u.mult
			t = strings.TrimSpace(t[:len(t)-len(u.suffix)])
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want a number with an optional unit (k, M, G, T)", str)
	}
	return Size(n * float64(mult)), nil
}

// Validate checks the section.
func (c Config) Validate() error {
	if c.Mode != "" {
		if _, err := ParseMode(c.Mode); err != nil {
			return err
		}
	}
	for _, d := range c.Network.Allow {
		if err := ValidDomain(d); err != nil {
			return err
		}
	}
	if c.Limits.Processes < 0 || c.Limits.CPUSeconds < 0 {
		return fmt.Errorf("sandbox: limits must not be negative")
	}
	return nil
}

// ValidDomain checks an allow-list entry: a host name, "*." and a domain,
// or an IP address.
func ValidDomain(d string) error {
	host := strings.TrimPrefix(d, "*.")
	if host == "" || strings.ContainsAny(host, "/@ *?") {
		return fmt.Errorf("sandbox: network.allow: %q is not a domain (want \"example.com\" or \"*.example.com\")", d)
	}
	return nil
}
