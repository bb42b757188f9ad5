package storetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/session/invariants"
	"github.com/dshq/dsh/store"
)

// The crash harness re-executes the test binary as a child that runs a
// scripted agent session against the backend (turns of several steps with
// streamed chunks, tool calls and results, flushing where the agent loop
// flushes) and reports on stdout every seq it has seen durably flushed. The
// parent kills it with SIGKILL at a random moment, then checks the log:
// it passes invariants.CheckLog after repair, holds every event reported
// durable, and takes a new turn. Each chain of runs reuses one storage
// directory, so every child first resumes what the previous one left.

const (
	envCrashDir  = "DSH_STORETEST_CRASH_DIR"
	envCrashSeed = "DSH_STORETEST_CRASH_SEED"
	// EnvCrashRuns overrides the number of crash runs (per backend).
	EnvCrashRuns = "DSH_STORETEST_CRASH_RUNS"
	crashID      = session.ID("crash/session")
	crashCwd     = "/crash"
)

// CrashChild runs the crash child when this process is one, and then
// returns true (TestMain should return at once); otherwise it returns false.
func CrashChild(f Factory) bool {
	dir := os.Getenv(envCrashDir)
	if dir == "" {
		return false
	}
	seed, _ := strconv.ParseUint(os.Getenv(envCrashSeed), 10, 64)
	if err := crashChild(f, dir, seed); err != nil {
		fmt.Fprintf(os.Stdout, "error %v\n", err)
		os.Exit(3)
	}
	return true
}

func crashChild(f Factory, dir string, seed uint64) error {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	b, err := f.Open(dir)
	if err != nil {
		return err
	}
	scope := kernel.NewScope("crash-child")
	st := session.NewLive(nil)
	if err := invariants.Install(scope, st); err != nil {
		return err
	}
	c, err := store.Attach(scope, st, b, store.Options{})
	if err != nil {
		return err
	}
	opts := session.Options{Header: session.Header{Cwd: crashCwd}}
	h, evs, err := c.Load(ctx, crashID)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return err
	default:
		opts = session.Options{Header: h, Seed: evs}
	}
	s, err := st.Create(ctx, scope, crashID, opts)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(out, "ready %d\n", s.Len())
	out.Flush()
	flush := func() error {
		if err := st.FlushSession(ctx, s); err != nil {
			return err
		}
		last, _ := s.Event(int64(s.Len() - 1))
		fmt.Fprintf(out, "durable %d %s\n", last.Seq, last.Type)
		return out.Flush()
	}
	for {
		turn := s.LastTurn() + 1
		if err := Apply(ctx, s, []Op{TurnStart(turn), User(fmt.Sprintf("turn %d", turn))}); err != nil {
			return err
		}
		if err := flush(); err != nil { // before the first model request
			return err
		}
		steps := 1 + rng.IntN(3)
		for step := 1; step <= steps; step++ {
			var ops []Op
			if step < steps {
				ops = ToolStep(turn, step, int64(s.Len()), rng.IntN(20), llm.CallID(fmt.Sprintf("call-%d-%d", turn, step)))
			} else {
				ops = []Op{StepStart(turn, step)}
				for i := range rng.IntN(20) {
					ops = append(ops, Chunk(turn, step, fmt.Sprintf("w%d ", i)))
				}
				ops = append(ops, Assistant(turn, step, "done"), StepEnd(turn, step))
			}
			if err := Apply(ctx, s, ops); err != nil {
				return err
			}
			if err := flush(); err != nil {
				return err
			}
		}
		if err := Apply(ctx, s, []Op{TurnEnd(turn)}); err != nil {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
	}
}

// CrashRuns is how many runs Crash makes: n, or the value of
// DSH_STORETEST_CRASH_RUNS when set (for longer soak runs).
func CrashRuns(n int) int {
	if v, err := strconv.Atoi(os.Getenv(EnvCrashRuns)); err == nil && v > 0 {
		return v
	}
	return n
}

type crashReport struct {
	ready   bool
	durable int64 // -1: nothing reported
	typ     string
	errLine string
}

// Crash runs the crash harness: runs children, chains of them per storage
// directory (each resuming the previous one's log), killed with SIGKILL
// after a random delay of up to maxDelay.
func Crash(t *testing.T, f Factory, runs, chains int, maxDelay time.Duration) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	per := (runs + chains - 1) / chains
	for ch := range chains {
		dir := t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for run := range per {
				if t.Failed() {
					return
				}
				seed := uint64(ch)<<32 | uint64(run)
				crashRun(t, f, exe, dir, seed, maxDelay)
			}
		}()
	}
	wg.Wait()
}

func crashRun(t *testing.T, f Factory, exe, dir string, seed uint64, maxDelay time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 0xc0ffee))
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envCrashDir+"="+dir, envCrashSeed+"="+strconv.FormatUint(seed, 10))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Error(err)
		return
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Error(err)
		return
	}
	rep := crashReport{durable: -1}
	var mu sync.Mutex
	readyCh := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			switch {
			case strings.HasPrefix(line, "ready "):
				rep.ready = true
				once.Do(func() { close(readyCh) })
			case strings.HasPrefix(line, "durable "):
				parts := strings.Fields(line)
				if len(parts) == 3 {
					rep.durable, _ = strconv.ParseInt(parts[1], 10, 64)
					rep.typ = parts[2]
				}
			case strings.HasPrefix(line, "error "):
				rep.errLine = line
			}
			mu.Unlock()
		}
		once.Do(func() { close(readyCh) })
	}()
	delay := time.Duration(rng.Int64N(int64(maxDelay) + 1))
	if rng.IntN(8) != 0 {
		// Usually count from "ready", so most kills land in the session;
		// sometimes from the start, so some land in load and repair.
		select {
		case <-readyCh:
		case <-time.After(20 * time.Second):
		}
	}
	time.Sleep(delay)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
	err = cmd.Wait()
	mu.Lock()
	r := rep
	mu.Unlock()
	if r.errLine != "" {
		t.Errorf("seed %d: child failed: %s", seed, r.errLine)
		return
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Errorf("seed %d: %v", seed, err)
		return
	}
	verifyCrash(t, f, dir, seed, r)
}

func verifyCrash(t *testing.T, f Factory, dir string, seed uint64, r crashReport) {
	ctx := context.Background()
	b, err := f.Open(dir)
	if err != nil {
		t.Errorf("seed %d: reopen: %v", seed, err)
		return
	}
	scope := kernel.NewScope("crash-verify")
	defer func() {
		if err := scope.Close(); err != nil {
			t.Errorf("seed %d: dispose: %v", seed, err)
		}
	}()
	c, err := store.Attach(scope, nil, b, store.Options{})
	if err != nil {
		t.Errorf("seed %d: %v", seed, err)
		return
	}
	_, evs, err := c.Load(ctx, crashID)
	if errors.Is(err, store.ErrNotFound) && r.durable < 0 {
		return // killed before anything was durable
	}
	if err != nil {
		t.Errorf("seed %d: load after kill (durable %d): %v", seed, r.durable, err)
		return
	}
	if err := invariants.CheckLog(evs); err != nil {
		t.Errorf("seed %d: reloaded log: %v", seed, err)
		return
	}
	if int64(len(evs)) <= r.durable {
		t.Errorf("seed %d: %d events after reload, but seq %d was reported durable", seed, len(evs), r.durable)
		return
	}
	if r.durable >= 0 && evs[r.durable].Type != r.typ {
		t.Errorf("seed %d: seq %d is %s, reported durable as %s", seed, r.durable, evs[r.durable].Type, r.typ)
		return
	}
	if os.Getenv("DSH_STORETEST_CRASH_DEBUG") != "" {
		t.Logf("seed %d: ready=%v durable=%d events=%d last=%s", seed, r.ready, r.durable, len(evs), evs[len(evs)-1].Type)
	}
	// It takes a new turn.
	turn := 0
	for _, e := range evs {
		if e.Type == session.TypeTurnStart {
			turn++
		}
	}
	next := int64(len(evs))
	if err := c.Append(ctx, crashID, Build(next, []Op{TurnStart(turn + 1), TurnEnd(turn + 1)})); err != nil {
		t.Errorf("seed %d: append after reload: %v", seed, err)
		return
	}
	infos, err := c.List(ctx, store.Query{Cwd: crashCwd})
	if err != nil || len(infos) != 1 || infos[0].Events != next+2 || infos[0].Turns != turn+1 {
		t.Errorf("seed %d: listing after reload: %+v %v (want %d events, %d turns)", seed, infos, err, next+2, turn+1)
	}
}
