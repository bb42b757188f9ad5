// Command resumebench measures what resuming a long session costs the
// real binary: it runs `dsh -c -p hi` (or `dsh acp` with session/load)
// against a loopback model server and reports the time from the process's
// start to the first model request it receives, and the process's peak
// RSS. Sessions come from gensession:
//
//	go build -o /tmp/dsh ./cmd/dsh
//	go run ./internal/cmd/gensession -home /tmp/h -events 1000000 -compact-every 10 -cwd /tmp/w
//	go run ./internal/cmd/resumebench -bin /tmp/dsh -home /tmp/h -cwd /tmp/w -runs 5
package main

import (
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
	flag.Parse()
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
