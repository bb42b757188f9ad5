//go:build !linux

package exepages

// Release does nothing where the executable's mappings cannot be read
// from /proc.
func Release() (Stats, error) { return Stats{}, nil }
