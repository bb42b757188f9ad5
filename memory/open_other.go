//go:build !unix

package memory

import "os"

func openNoBlock(name string) (*os.File, error) { return os.Open(name) }
