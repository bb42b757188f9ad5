package cli_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// BenchmarkFirstRequestWithStuckMCPServer times `dsh -p` from process start
// to the model's first request, with one configured stdio MCP server that
// never answers initialize (and, as a baseline, with none). MCP servers
// start in the background, so the stuck one must add nothing measurable.
//
//	go test ./cli -run '^$' -bench FirstRequest -benchtime 10x -count 5
func BenchmarkFirstRequestWithStuckMCPServer(b *testing.B) {
	for _, stuck := range []bool{false, true} {
		name := map[bool]string{false: "no-mcp", true: "stuck-mcp"}[stuck]
		b.Run(name, func(b *testing.B) {
			arrived := make(chan time.Time, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case arrived <- time.Now():
				default:
				}
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, textReply("ok"))
			}))
			defer srv.Close()
			home, dir := b.TempDir(), b.TempDir()
			if stuck {
				cfg := `{"mcpServers":{"stuck":{"command":"sleep","args":["1000"]}}}`
				os.WriteFile(filepath.Join(home, "settings.json"), []byte(cfg), 0o600)
			}
			var firsts []time.Duration
			b.ResetTimer()
			for range b.N {
				cmd := exec.Command(dshBin, "-p", "--model", "deepseek/deepseek-chat", "hi")
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "DSH_HOME="+home, "DEEPSEEK_API_KEY=test-key", "DEEPSEEK_BASE_URL="+srv.URL, "DSH_MODEL=")
				start := time.Now()
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				select {
				case at := <-arrived:
					firsts = append(firsts, at.Sub(start))
				case <-time.After(60 * time.Second):
					cmd.Process.Kill()
					b.Fatal("no request")
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			sort.Slice(firsts, func(i, j int) bool { return firsts[i] < firsts[j] })
			b.ReportMetric(float64(firsts[0].Microseconds())/1000, "min-ms-to-first-request")
			b.ReportMetric(float64(firsts[len(firsts)/2].Microseconds())/1000, "median-ms-to-first-request")
		})
	}
}
