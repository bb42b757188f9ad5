package main

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestStartPathLeavesOut fails when a package whose initialisation was
// taken off every dsh start (issue 25; GODEBUG=inittrace=1) is linked
// into dsh again. Each entry says why it was costly and what stands in.
func TestStartPathLeavesOut(t *testing.T) {
	banned := map[string]string{
		// 2–4 ms and 260 KB of regexps compiled at init (linkify); the
		// terminal's own parsers are in ui/term/gfm.go.
		"github.com/yuin/goldmark/extension": "ui/term's gfm extensions",
		// ~150 package inits (gRPC's balancers, resolvers and logs, the
		// protobuf runtime's registries) run by every start for an exporter
		// few runs use; telemetry/otlpwire.go encodes OTLP itself.
		"google.golang.org/grpc":                                            "telemetry's own OTLP/HTTP exporter",
		"google.golang.org/protobuf/proto":                                  "telemetry's own protobuf encoding",
		"go.opentelemetry.io/proto/otlp/trace/v1":                           "telemetry/otlpwire.go",
		"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp":   "telemetry/otlpexport.go",
		"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp": "telemetry/otlpexport.go",
		// debug/buildinfo links the readers of every object format Go
		// knows (elf, macho, pe, xcoff, plan9obj, dwarf: ~0.8 MB and
		// dwarf's init) to read the helper binary's build information.
		"debug/buildinfo": "sandbox/linux/buildinfo.go",
		"debug/dwarf":     "sandbox/linux/buildinfo.go",
		// go-seccomp-bpf/arch builds its system call tables (165 KB of
		// maps, ~0.6 ms) at init; amd64 carries the filters compiled.
		"github.com/elastic/go-seccomp-bpf/arch": "sandbox/linux/seccomp_table_amd64.go",
		// goldmark's root package links its HTML renderer (and its
		// init); the terminal needs only the parser.
		"github.com/yuin/goldmark/renderer/html": "ui/term's newParser",
	}
	if runtime.GOARCH != "amd64" {
		// Only amd64 has its seccomp filters compiled ahead (seccompgen).
		delete(banned, "github.com/elastic/go-seccomp-bpf/arch")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if instead, ok := banned[p]; ok {
			why, _ := exec.Command("go", "list", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, "-deps", ".").Output()
			var importers []string
			for _, l := range strings.Split(string(why), "\n") {
				if name, imps, ok := strings.Cut(l, ": "); ok && strings.Contains(" "+imps+" ", " "+p+" ") {
					importers = append(importers, name)
				}
			}
			t.Errorf("dsh links %s again (imported by %v); use %s", p, importers, instead)
		}
	}
}
