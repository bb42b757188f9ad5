package mcp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshq/dsh/doctor"
	"github.com/dshq/dsh/mcp"
)

// resourceServer is testdata/resources.mjs (on the npm MCP SDK) in a mode.
func resourceServer(t *testing.T, name, mode string) mcp.ServerConfig {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join("..", "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Skip("the npm MCP SDK is not installed (run npm ci at the repository root)")
	}
	p, err := filepath.Abs(filepath.Join("testdata", "resources.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	return mcp.ServerConfig{Name: name, Command: "node", Args: []string{p, mode}}
}

// Resources follows resources/list's pages across the servers that offer
// resources, skips one that does not advertise them, and reports (warns,
// doctor) one whose listing fails instead of leaving it out silently;
// ReadResource returns text and decoded blobs.
func TestResourcesFromNodeServer(t *testing.T) {
	var mu sync.Mutex
	var warned []string
	r := newRig(t, mcp.Options{Warn: func(s string) { mu.Lock(); warned = append(warned, s); mu.Unlock() }})
	startReady(t, r, resourceServer(t, "notes", "pages"), resourceServer(t, "broken", "failing"), resourceServer(t, "plain", "none"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	res, errs := r.m.Resources(ctx)
	var uris []string
	for _, x := range res {
		if x.Server != "notes" {
			t.Errorf("resource %s from %q, want only the notes server's", x.URI, x.Server)
		}
		uris = append(uris, x.URI)
	}
	want := []string{"notes://release/plan", "notes://release/long", "img://pixel.png", "bin://firmware.bin", "db://users/42"}
	if strings.Join(uris, " ") != strings.Join(want, " ") {
		t.Fatalf("resources %v, want all five pages' %v", uris, want)
	}
	if res[0].Name != "release-plan" || res[0].Title != "Release plan" || res[0].MIMEType != "text/plain" {
		t.Errorf("first resource %+v", res[0])
	}
	if len(errs) != 1 {
		t.Fatalf("errors %v, want the broken server's only", errs)
	}
	var re *mcp.ResourceError
	if !errors.As(errs[0], &re) || re.Server != "broken" || !strings.Contains(errs[0].Error(), "the resource index is corrupt") {
		t.Errorf("error %v, want the broken server's own message", errs[0])
	}
	mu.Lock()
	if len(warned) != 1 || !strings.Contains(warned[0], `"broken"`) {
		t.Errorf("warnings %q, want one about the broken server", warned)
	}
	mu.Unlock()
	found := false
	for _, f := range r.m.Findings() {
		if f.Subject == "server broken" && f.Severity == doctor.Warning && strings.Contains(f.Message, "the resource index is corrupt") {
			found = true
		}
		if f.Subject == "server plain" && f.Severity != doctor.OK {
			t.Errorf("the server without resources has a finding: %+v", f)
		}
	}
	if !found {
		t.Errorf("doctor does not report the failed listing: %+v", r.m.Findings())
	}

	text, err := r.m.ReadResource(ctx, "notes", "notes://release/plan")
	if err != nil {
		t.Fatal(err)
	}
	if len(text) != 1 || !strings.Contains(text[0].Text, "kumquat build on Friday") || text[0].MIMEType != "text/plain" || text[0].Blob != nil {
		t.Errorf("text resource %+v", text)
	}
	img, err := r.m.ReadResource(ctx, "notes", "img://pixel.png")
	if err != nil {
		t.Fatal(err)
	}
	pixel, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
	if len(img) != 1 || !bytes.Equal(img[0].Blob, pixel) || img[0].MIMEType != "image/png" {
		t.Errorf("blob resource %+v, want the PNG's bytes", img)
	}
	if _, err := r.m.ReadResource(ctx, "notes", "notes://nowhere"); err == nil || !strings.Contains(err.Error(), "no resource notes://nowhere") {
		t.Errorf("reading a missing resource: %v", err)
	}
	if _, err := r.m.ReadResource(ctx, "plain", "notes://release/plan"); err == nil || !strings.Contains(err.Error(), "offers no resources") {
		t.Errorf("reading from a server without resources: %v", err)
	}
	if _, err := r.m.ReadResource(ctx, "nosuch", "x://y"); err == nil {
		t.Error("reading from an unknown server succeeded")
	}
}
