package acp

import (
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/mcp"
)

func TestMCPConfigs(t *testing.T) {
	got, err := mcpConfigs([]sdk.McpServer{
		{Stdio: &sdk.McpServerStdio{Name: "fs", Command: "/bin/srv", Args: []string{"-v"}, Env: []sdk.EnvVariable{{Name: "K", Value: "v"}}}},
		{Http: &sdk.McpServerHttpInline{Name: "web", Type: "http", Url: "http://x/mcp", Headers: []sdk.HttpHeader{{Name: "A", Value: "b"}}}},
		{Sse: &sdk.McpServerSseInline{Name: "old", Type: "sse", Url: "http://x/sse"}},
		{Acp: &sdk.McpServerAcpInline{}},
	})
	if err == nil {
		t.Error("the ACP-channel transport was not reported")
	}
	if len(got) != 3 {
		t.Fatalf("configs %+v", got)
	}
	if c := got[0]; c.Transport() != mcp.TransportStdio || c.Command != "/bin/srv" || c.Args[0] != "-v" || c.Env["K"] != "v" || c.Source != mcp.SourceSession || c.Validate() != nil {
		t.Errorf("stdio %+v", c)
	}
	if c := got[1]; c.Transport() != mcp.TransportHTTP || c.URL != "http://x/mcp" || c.Headers["A"] != "b" || c.Validate() != nil {
		t.Errorf("http %+v", c)
	}
	if c := got[2]; c.Transport() != mcp.TransportSSE || c.URL != "http://x/sse" || c.Headers != nil || c.Validate() != nil {
		t.Errorf("sse %+v", c)
	}
}
