//go:build !linux

package helper

// Main does nothing where there is no Linux sandbox.
func Main() {}
