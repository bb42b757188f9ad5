//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package acp

import "os"

// ClaimStdout returns standard output for the protocol and points
// os.Stdout at standard error, so Go code that prints lands there. (On
// this platform descriptors are not redirected.)
func ClaimStdout() (*os.File, error) {
	out := os.Stdout
	os.Stdout = os.Stderr
	return out, nil
}
