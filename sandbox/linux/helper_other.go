//go:build !linux

package linux

// Main does nothing where there is no Linux sandbox.
func Main() {}
