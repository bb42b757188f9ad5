//go:build !linux

package main

// harden has nothing to do here: the /proc/PID/environ leak it closes on
// Linux (see harden_linux.go) does not exist on other systems.
func harden() error { return nil }
