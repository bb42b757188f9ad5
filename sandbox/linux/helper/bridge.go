//go:build linux

package helper

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// bridge connects the sandbox's loopback to dsh's proxy: it listens on
// 127.0.0.1:ProxyPort inside the network namespace and carries each
// connection to this command's proxy socket, reached through the
// descriptor dsh passed (the socket's directory is not visible in here).
//
// It speaks to the kernel directly rather than through package net: net
// (with net/netip) costs every helper start its initialisation and page
// faults, and the bridge needs only accept, connect and copy, each on its
// own goroutine with blocking descriptors.
type bridge struct {
	fd int
}

func newBridge() (*bridge, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: ProxyPort, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	if err := unix.Listen(fd, 64); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return &bridge{fd: fd}, nil
}

func (b *bridge) serve() {
	target := &unix.SockaddrUnix{Name: fdPath(fdProxy)}
	for {
		nfd, _, err := unix.Accept4(b.fd, unix.SOCK_CLOEXEC)
		if err == unix.EINTR || err == unix.ECONNABORTED {
			continue
		}
		if err != nil {
			return
		}
		go carry(nfd, target)
	}
}

// carry copies both ways between an accepted connection and a new one to
// the proxy, passing each side's end of stream on as a half close.
func carry(down int, target *unix.SockaddrUnix) {
	c := os.NewFile(uintptr(down), "bridge")
	defer c.Close()
	ufd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	up := os.NewFile(uintptr(ufd), "proxy")
	defer up.Close()
	if err := unix.Connect(ufd, target); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(up, c)
		_ = unix.Shutdown(ufd, unix.SHUT_WR)
		close(done)
	}()
	_, _ = io.Copy(c, up)
	_ = unix.Shutdown(down, unix.SHUT_WR)
	<-done
}
