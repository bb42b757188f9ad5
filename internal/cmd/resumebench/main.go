// Command resumebench measures what resuming a long session costs the
// real binary: it runs `dsh -c -p hi` (or `dsh acp` with session/load)
// against a loopback model server and reports the time from the process's
// start to the first model request it receives, and the process's peak
// RSS. With -acp ID it runs `dsh acp` instead and times session/load of
// that session: from the request to its answer, the bytes of the frames
// the replay sent, and the peak RSS. Sessions come from gensession:
//
//	go build -o /tmp/dsh ./cmd/dsh
//	go run ./internal/cmd/gensession -home /tmp/h -events 1000000 -compact-every 10 -cwd /tmp/w
//	go run ./internal/cmd/resumebench -bin /tmp/dsh -home /tmp/h -cwd /tmp/w -runs 5
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"
)

// reply is one streamed DeepSeek-format answer, written in one write.
const reply = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"deepseek-chat\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"ok\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":1,\"total_tokens\":11}}\n\ndata: [DONE]\n\n"

func main() {
	bin := flag.String("bin", "dsh", "the dsh binary")
	home := flag.String("home", "", "$DSH_HOME holding the session")
	cwd := flag.String("cwd", "", "the session's working directory")
	runs := flag.Int("runs", 5, "runs")
	acpID := flag.String("acp", "", "time ACP session/load of this session instead")
	full := flag.Bool("full", false, "with -acp: ask for the full replay")
	flag.Parse()
	if *acpID != "" {
		loadBench(*bin, *home, *cwd, *acpID, *runs, *full)
		return
	}
	first := make(chan time.Time, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case first <- time.Now():
		default:
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Length", fmt.Sprint(len(reply)))
		io.WriteString(w, reply)
	}))
	var waits []time.Duration
	var rss []int64
	for range *runs {
		for len(first) > 0 {
			<-first
		}
		cmd := exec.Command(*bin, "-c", "-p", "hi", "--model", "deepseek/deepseek-chat")
		cmd.Dir = *cwd
		cmd.Env = append(os.Environ(), "DSH_HOME="+*home, "DEEPSEEK_API_KEY=k", "DEEPSEEK_BASE_URL=http://"+ln.Addr().String())
		cmd.Stderr = os.Stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			fail(err)
		}
		var got time.Time
		select {
		case got = <-first:
		case <-time.After(60 * time.Second):
			fail(fmt.Errorf("no request in 60 s"))
		}
		if err := cmd.Wait(); err != nil {
			fail(err)
		}
		waits = append(waits, got.Sub(start))
		rss = append(rss, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
	}
	slices.Sort(waits)
	slices.Sort(rss)
	fmt.Printf("time to first request: min %.1f ms, median %.1f ms, max %.1f ms; peak RSS median %.1f MiB, max %.1f MiB (%d runs)\n",
		ms(waits[0]), ms(waits[len(waits)/2]), ms(waits[len(waits)-1]), float64(rss[len(rss)/2])/1024, float64(rss[len(rss)-1])/1024, len(waits))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "resumebench:", err)
	os.Exit(1)
}

// loadBench times `dsh acp`'s session/load of id, runs times.
func loadBench(bin, home, cwd, id string, runs int, full bool) {
	var waits []time.Duration
	var rss []int64
	var frames, bytes int
	for range runs {
		cmd := exec.Command(bin, "acp")
		cmd.Dir = cwd
		cmd.Env = append(os.Environ(), "DSH_HOME="+home, "DEEPSEEK_API_KEY=k", "DEEPSEEK_BASE_URL=http://127.0.0.1:9")
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			fail(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			fail(err)
		}
		if err := cmd.Start(); err != nil {
			fail(err)
		}
		r := bufio.NewReaderSize(out, 1<<20)
		// until reads frames up to the response with the id, counting the
		// notifications' bytes.
		until := func(rid int) (int, int) {
			n, b := 0, 0
			for {
				line, err := r.ReadBytes('\n')
				if err != nil {
					fail(fmt.Errorf("dsh acp: %v", err))
				}
				var m struct {
					ID     *int            `json:"id"`
					Method string          `json:"method"`
					Error  json.RawMessage `json:"error"`
				}
				if json.Unmarshal(line, &m) != nil {
					fail(fmt.Errorf("not JSON-RPC: %q", line))
				}
				if m.ID != nil && m.Method == "" && *m.ID == rid {
					if m.Error != nil {
						fail(fmt.Errorf("request %d: %s", rid, m.Error))
					}
					return n, b
				}
				if m.Method == "session/update" {
					n++
					b += len(line)
				}
			}
		}
		fmt.Fprintf(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`+"\n")
		until(1)
		meta := ""
		if full {
			meta = `,"_meta":{"dsh":{"replay":"full"}}`
		}
		start := time.Now()
		fmt.Fprintf(in, `{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":%q,"cwd":%q,"mcpServers":[]%s}}`+"\n", id, cwd, meta)
		frames, bytes = until(2)
		waits = append(waits, time.Since(start))
		in.Close()
		if err := cmd.Wait(); err != nil {
			fail(err)
		}
		rss = append(rss, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
	}
	slices.Sort(waits)
	slices.Sort(rss)
	fmt.Printf("session/load: min %.1f ms, median %.1f ms, max %.1f ms; %d frames, %d bytes; peak RSS median %.1f MiB, max %.1f MiB (%d runs)\n",
		ms(waits[0]), ms(waits[len(waits)/2]), ms(waits[len(waits)-1]), frames, bytes, float64(rss[len(rss)/2])/1024, float64(rss[len(rss)-1])/1024, len(waits))
}
