package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The baseline is the floor under the figures: the same scripted model,
// the same sessions and steps, the same clients and timing, but instead of
// dsh serve a relay process that only copies each model call's stream to
// its client (one request per step, each event written and flushed as it
// arrives). Its chunk latency is what two process hops over loopback cost
// on this machine at this load; dsh's added latency is to be read against
// it, since on a loaded machine most of either is waiting for a CPU.

// relayEnv names the model a re-executed servebench relays to.
const relayEnv = "SERVEBENCH_RELAY_MODEL"

// runRelay serves the relay: every request is posted to the model and its
// event stream copied through, flushed at every event's end.
func runRelay(model string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	cl := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000}}
	fmt.Fprintf(os.Stderr, "relay listening on http://%s\n", ln.Addr())
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), "POST", model+"/chat/completions", r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		resp, err := cl.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadSlice('\n')
			if len(line) > 0 {
				_, _ = w.Write(line)
				if len(bytes.TrimSpace(line)) == 0 {
					fl.Flush()
				}
			}
			if err != nil {
				fl.Flush()
				return
			}
		}
	}))
}

// runBaseline runs c against a relay instead of dsh serve.
func runBaseline(ctx context.Context, c Config) (*Report, error) {
	model, err := startModel(c)
	if err != nil {
		return nil, err
	}
	defer model.Close()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), relayEnv+"="+model.URL)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stderr)
	var base string
	for sc.Scan() {
		if m := listening.FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
			break
		}
	}
	if base == "" {
		return nil, errors.New("the relay did not listen")
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.Concurrency * 2}}
	defer hc.CloseIdleConnections()
	r := &Report{Config: c}
	start, cpu0 := time.Now(), cpuTime(cmd.Process.Pid)
	r.runSessions(func() ([]time.Duration, [][2]time.Duration, error) {
		lat, err := relayTurn(ctx, hc, base, c)
		return lat, nil, err
	})
	r.Wall, r.CPU = time.Since(start), cpuTime(cmd.Process.Pid)-cpu0
	return r, nil
}

// relayTurn runs one turn's steps through the relay, one call per step,
// the history growing by a tool result each (the model answers by it).
func relayTurn(ctx context.Context, hc *http.Client, base string, c Config) ([]time.Duration, error) {
	var lat []time.Duration
	msgs := []map[string]string{{"role": "user", "content": "go"}}
	for range c.Steps {
		body, _ := json.Marshal(map[string]any{"model": "deepseek-chat", "stream": true, "messages": msgs})
		req, err := http.NewRequestWithContext(ctx, "POST", base+"/", bytes.NewReader(body))
		if err != nil {
			return lat, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return lat, err
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
			if !ok || string(data) == "[DONE]" {
				continue
			}
			now := time.Now().UnixNano()
			var ch struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(data, &ch); err != nil {
				resp.Body.Close()
				return lat, fmt.Errorf("relay: a chunk is not JSON: %v", err)
			}
			for _, choice := range ch.Choices {
				for _, m := range stamp.FindAllStringSubmatch(choice.Delta.Content, -1) {
					at, _ := strconv.ParseInt(m[1], 10, 64)
					lat = append(lat, time.Duration(now-at))
				}
			}
		}
		err = sc.Err()
		resp.Body.Close()
		if err != nil {
			return lat, err
		}
		msgs = append(msgs, map[string]string{"role": "assistant", "content": "call"}, map[string]string{"role": "tool", "content": "result"})
	}
	if want := c.Steps * c.Chunks; len(lat) != want {
		return lat, fmt.Errorf("relay: %d timed chunks, want %d", len(lat), want)
	}
	return lat, nil
}

// isRelay reports whether this process is a baseline's relay.
func isRelay() (string, bool) {
	m := os.Getenv(relayEnv)
	return strings.TrimSpace(m), m != ""
}
