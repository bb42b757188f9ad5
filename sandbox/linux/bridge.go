//go:build linux

package linux

import (
	"io"
	"net"
	"strconv"
)

// bridge connects the sandbox's loopback to dsh's proxy: it listens on
// 127.0.0.1:ProxyPort inside the network namespace and carries each
// connection to this command's proxy socket, reached through the
// descriptor dsh passed (the socket's directory is not visible in here).
type bridge struct {
	l net.Listener
}

func newBridge() (*bridge, error) {
	l, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(ProxyPort))
	if err != nil {
		return nil, err
	}
	return &bridge{l: l}, nil
}

func (b *bridge) serve() {
	target := fdPath(fdProxy)
	for {
		c, err := b.l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("unix", target)
			if err != nil {
				return
			}
			defer up.Close()
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(up, c)
				if uc, ok := up.(*net.UnixConn); ok {
					_ = uc.CloseWrite()
				}
				close(done)
			}()
			_, _ = io.Copy(c, up)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			<-done
		}()
	}
}
