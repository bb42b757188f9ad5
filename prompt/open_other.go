//go:build !unix

package prompt

import "os"

func openNoBlock(name string) (*os.File, error) { return os.Open(name) }
