package acp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/acp/acptest"
	"github.com/dshq/dsh/internal/tmpfs"
	"github.com/dshq/dsh/session"
)

// An editor session whose store fills up: the prompt that cannot be saved
// is answered with an ACP error (the model is not called again), the agent
// stays up, and once space is freed the next prompt writes everything the
// failed turns left in memory — nothing of the session is lost, although
// those turns never reached the disk while they ran.
func TestACPDiskFullThenFreed(t *testing.T) {
	for _, store := range []string{"jsonl", "sqlite"} {
		t.Run(store, func(t *testing.T) {
			fs := tmpfs.New(t, "1m")
			home := filepath.Join(fs.Dir, "home")
			if err := os.Mkdir(fs.Path(home), 0o700); err != nil {
				t.Fatal(err)
			}
			if store == "sqlite" {
				if err := os.WriteFile(fs.Path(filepath.Join(home, "settings.json")), []byte(`{"sessionStore":"sqlite"}`), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			fill := filepath.Join(home, "fill")
			// The second answer fills the disk while it is being asked for,
			// and is too big for the slack left in the store's files.
			bigAnswer := "the second answer " + strings.Repeat("is long ", 2000)
			var mu sync.Mutex
			calls := 0
			model := acptest.New()
			defer model.Close()
			model.SetDefault(func(map[string]any) acptest.Reply {
				mu.Lock()
				calls++
				n := calls
				mu.Unlock()
				switch n {
				case 1:
					return acptest.Text("the first answer")
				case 2:
					fs.Fill(fill)
					return acptest.Text(bigAnswer)
				}
				return acptest.Text("the third answer")
			})
			dir := t.TempDir()
			argv := append(fs.Enter(dir), dshBinary(t), "acp")
			cmd := exec.Command(argv[0], argv[1:]...)
			env := os.Environ()
			for k, v := range model.Env() {
				env = append(env, k+"="+v)
			}
			cmd.Env = append(env, "DSH_HOME="+home, "HOME="+home)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			var waitErr error
			go func() { waitErr = cmd.Wait(); close(exited) }()
			defer func() {
				select {
				case <-exited:
				default:
					_ = cmd.Process.Kill()
					<-exited
				}
			}()
			c := newClient()
			conn := sdk.NewClientSideConnection(c, stdin, stdout)
			conn.SetLogger(slog.New(slog.DiscardHandler))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
				t.Fatalf("initialize: %v\n%s", err, stderr.String())
			}
			ns, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: dir, McpServers: []sdk.McpServer{}})
			if err != nil {
				t.Fatalf("session/new: %v\n%s", err, stderr.String())
			}
			prompt := func(text string) (sdk.PromptResponse, error) {
				return conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
			}
			if r, err := prompt("the first prompt"); err != nil || r.StopReason != sdk.StopReasonEndTurn {
				t.Fatalf("first prompt: %+v %v\n%s", r, err, stderr.String())
			}
			notSaved := func(what string, err error) {
				t.Helper()
				if err == nil || !strings.Contains(err.Error(), "could not be saved") {
					t.Fatalf("%s: want an ACP error saying the session could not be saved, got %v", what, err)
				}
			}
			_, err = prompt("the second prompt")
			notSaved("the prompt during which the disk filled", err)
			// Still full: this prompt cannot even be recorded, so the model
			// is not asked.
			_, err = prompt("the prompt on a full disk " + strings.Repeat("padding ", 1000))
			notSaved("a prompt on a full disk", err)
			if n := len(model.Requests()); n != 2 {
				t.Fatalf("the model was asked %d times; a prompt that cannot be saved must not reach it", n)
			}
			fs.Free(fill)
			if r, err := prompt("the third prompt"); err != nil || r.StopReason != sdk.StopReasonEndTurn {
				t.Fatalf("third prompt, after freeing space: %+v %v\n%s", r, err, stderr.String())
			}
			reqs := model.Requests()
			hist, _ := json.Marshal(reqs[len(reqs)-1]["messages"])
			for _, want := range []string{"the first prompt", "the second prompt", "the second answer", "the third prompt"} {
				if !strings.Contains(string(hist), want) {
					t.Fatalf("the third request lacks %q: %s", want, hist)
				}
			}
			stdin.Close()
			select {
			case <-exited:
				if waitErr != nil {
					t.Fatalf("dsh acp exited with %v\n%s", waitErr, stderr.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatal("dsh acp did not exit after its input closed")
			}

			// Everything is on disk now, the failed turns included.
			exp := append(fs.Enter(dir), "env", "DSH_HOME="+home, dshBinary(t), "sessions", "export", string(ns.SessionId))
			out, err := exec.Command(exp[0], exp[1:]...).Output()
			if err != nil {
				t.Fatalf("export: %v", err)
			}
			var events []session.Event
			for i, line := range strings.Split(strings.TrimSpace(string(out)), "\n")[1:] {
				var e session.Event
				if err := json.Unmarshal([]byte(line), &e); err != nil {
					t.Fatalf("export line %d: %v", i+2, err)
				}
				events = append(events, e)
			}
			reasons := balanced(t, events)
			if len(reasons) != 4 || reasons[0] != session.EndCompleted || reasons[1] != session.EndError || reasons[2] != session.EndError || reasons[3] != session.EndCompleted {
				t.Fatalf("turn end reasons %v", reasons)
			}
			for _, want := range []string{"the first answer", "the second prompt", "the second answer is long", "the prompt on a full disk", "the third answer", session.CodeNotSaved} {
				if !strings.Contains(string(out), want) {
					t.Fatalf("the stored session lacks %q", want)
				}
			}
		})
	}
}
