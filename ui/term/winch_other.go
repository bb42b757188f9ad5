//go:build !unix

package term

func notifyResize(func()) (stop func()) { return func() {} }
