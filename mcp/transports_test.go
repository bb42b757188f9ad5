package mcp_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dshq/dsh/mcp"
)

// everythingHTTP runs server-everything in its sse or streamableHttp mode
// on a free loopback port and returns the server's URL once it answers.
func everythingHTTP(t *testing.T, mode string) string {
	t.Helper()
	entry := nodeServer(t, "server-everything")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", entry, mode)
	cmd.Env = append(cmd.Environ(), fmt.Sprintf("PORT=%d", port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything %s did not listen", mode)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if mode == "sse" {
		return base + "/sse"
	}
	return base + "/mcp"
}

// server-everything over streamable HTTP and over the legacy SSE
// transport: the connection outlives the connect call (the SSE stream is
// the server's lifetime, not the handshake's), calls go through, and a call
// made well after connecting still works.
func TestEverythingOverHTTPAndSSE(t *testing.T) {
	for _, mode := range []string{"streamableHttp", "sse"} {
		t.Run(mode, func(t *testing.T) {
			url := everythingHTTP(t, mode)
			typ := mcp.TransportHTTP
			if mode == "sse" {
				typ = mcp.TransportSSE
			}
			r := newRig(t, mcp.Options{HTTPClient: &http.Client{}})
			startReady(t, r, mcp.ServerConfig{Name: "ev", Type: typ, URL: url})
			for i, msg := range []string{"first", "second"} {
				if i > 0 {
					time.Sleep(300 * time.Millisecond) // the handshake's context is long gone
				}
				out := execute(t, r.h.Tools, "mcp__ev__echo", map[string]string{"message": msg})
				if out.Result.IsError || textOf(out.Result) != "Echo: "+msg {
					t.Fatalf("call %d over %s = %+v", i, mode, out.Result)
				}
			}
			if out := execute(t, r.h.Tools, "mcp__ev__get-sum", map[string]int{"a": 2, "b": 3}); !strings.Contains(textOf(out.Result), "5") {
				t.Errorf("get-sum = %+v", out.Result)
			}
			_ = context.Background
		})
	}
}
