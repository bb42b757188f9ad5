//go:build linux

package local

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/sandbox"
	"github.com/dshq/dsh/sandbox/linux"
)

// BenchmarkBashTrue measures a foreground round trip of `true`: spawn in a
// new session, collect both streams, reap, check the group is empty, build
// the result. Target: under 5 ms per op. Besides the mean (ns/op) it reports
// the median and 90th percentile, which say more on a shared, noisy machine.
func BenchmarkBashTrue(b *testing.B) {
	e := newExec(b, Config{})
	req := bash.ExecRequest{Command: "true", Workdir: b.TempDir()}
	ctx := context.Background()
	b.ReportAllocs()
	var laps []time.Duration
	for b.Loop() {
		start := time.Now()
		res, err := e.Run(ctx, req)
		laps = append(laps, time.Since(start))
		if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
			b.Fatalf("Run: %+v, %v", res, err)
		}
	}
	reportPercentiles(b, laps)
}

// BenchmarkExecTrueBaseline is plain os/exec running `bash -c true` with
// captured output: the floor BenchmarkBashTrue is compared against, measured
// on the same machine under the same load.
func BenchmarkExecTrueBaseline(b *testing.B) {
	path, err := exec.LookPath("bash")
	if err != nil {
		b.Skip("no bash")
	}
	var laps []time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := exec.Command(path, "-c", "true").Output(); err != nil {
			b.Fatal(err)
		}
		laps = append(laps, time.Since(start))
	}
	reportPercentiles(b, laps)
}

func reportPercentiles(b *testing.B, laps []time.Duration) {
	if len(laps) == 0 {
		return
	}
	slices.Sort(laps)
	b.ReportMetric(float64(laps[len(laps)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(laps[len(laps)*9/10].Nanoseconds()), "p90-ns")
}

// BenchmarkSessionScan is the /proc scan every command's end now costs (it
// looks for members of the session left in other process groups). It grows
// with the number of processes on the machine, reported as procs.
func BenchmarkSessionScan(b *testing.B) {
	if _, ok := sessionGroups(1); !ok {
		b.Skip("no /proc")
	}
	entries, _ := os.ReadDir("/proc")
	b.ReportAllocs()
	for b.Loop() {
		sessionGroups(1 << 30) // no such session: the full scan
	}
	b.ReportMetric(float64(len(entries)), "procs")
}

// BenchmarkBashTrueSandboxed is BenchmarkBashTrue under the Linux sandbox
// in workspace-write (helper re-exec, namespaces, mounts, Landlock,
// seccomp, the proxy listener): the difference from BenchmarkBashTrue is
// the sandbox's added cost per command. BenchmarkBashTrueContained is the
// same in danger-full-access, where the helper only contains.
func BenchmarkBashTrueSandboxed(b *testing.B) { benchSandboxed(b, sandbox.ModeWorkspaceWrite) }

func BenchmarkBashTrueContained(b *testing.B) { benchSandboxed(b, sandbox.ModeFullAccess) }

// BenchmarkBashTrueSandboxedHelper is BenchmarkBashTrueSandboxed with the
// dedicated helper (cmd/dsh-sandbox-helper, built here) instead of this
// test binary as the helper: what an installed dsh with its helper beside
// it pays.
func BenchmarkBashTrueSandboxedHelper(b *testing.B) {
	sb := linux.New(linux.Options{Grace: testGrace, Exe: buildHelper(b)})
	b.Cleanup(func() { _ = sb.Close() })
	benchSandboxedWith(b, sb, sandbox.ModeWorkspaceWrite)
}

// BenchmarkBashTrueSandboxedCold is BenchmarkBashTrueSandboxedHelper with
// a helper started and set up for every command (linux.Options.NoWarm):
// what a command costs without a warm helper, and what each plan's first
// command costs.
func BenchmarkBashTrueSandboxedCold(b *testing.B) {
	sb := linux.New(linux.Options{Grace: testGrace, Exe: buildHelper(b), NoWarm: true})
	b.Cleanup(func() { _ = sb.Close() })
	benchSandboxedWith(b, sb, sandbox.ModeWorkspaceWrite)
}

func benchSandboxed(b *testing.B, mode sandbox.Mode) { benchSandboxedWith(b, newSandbox(b), mode) }

func benchSandboxedWith(b *testing.B, sb *linux.Sandbox, mode sandbox.Mode) {
	e := newExec(b, Config{Sandbox: sb})
	ws := b.TempDir()
	p, err := sandbox.Compile(sandbox.Inputs{Mode: mode, Cwd: ws})
	if err != nil {
		b.Fatal(err)
	}
	req := bash.ExecRequest{Command: "true", Workdir: ws, Sandbox: p}
	ctx := context.Background()
	if _, err := e.Run(ctx, req); err != nil { // the probe runs once, outside the laps
		b.Fatal(err)
	}
	b.ReportAllocs()
	var laps []time.Duration
	for b.Loop() {
		start := time.Now()
		res, err := e.Run(ctx, req)
		laps = append(laps, time.Since(start))
		if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
			b.Fatalf("Run: %+v, %v", res, err)
		}
	}
	reportPercentiles(b, laps)
}
