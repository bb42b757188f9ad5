//go:build !unix

package term

import (
	"io"
	"os"

	xterm "golang.org/x/term"
)

// jobControl is unix job control; elsewhere there is none.
type jobControl struct{}

func newJobControl(*os.File, *xterm.State, func()) *jobControl { return nil }
func (*jobControl) stop()                                      {}
func (*jobControl) available() bool                            { return false }
func (*jobControl) suspend(io.Writer) error                    { return nil }
func (*jobControl) resume(io.Writer) (bool, error)             { return true, nil }
func (*jobControl) backgroundRead(error) bool                  { return false }
