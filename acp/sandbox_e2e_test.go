package acp_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dshq/dsh/acp/acptest"
)

// The sandbox per session over ACP, through the real binary: each
// session's config options carry its sandbox mode and whether the kernel
// enforces it (and so does its _meta); setting one session to read-only
// confines that session's commands alone; and a sandboxed command reaching
// a host nobody allowed puts the question to the editor's user, whose
// "always allow" lets it through and holds for the session's next
// commands, while "reject" leaves it blocked and the model told.
func TestSandboxPerSessionOverACP(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the kernel sandbox is Linux's")
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			// Read the request before answering: closing a socket with
			// unread bytes sends a reset, which can destroy the answer
			// before the proxy reads it ("cannot reach …", about one run
			// in six).
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, _ = http.ReadRequest(bufio.NewReader(c))
			_, _ = c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: 15\r\n\r\nhost-reached-7\n"))
			_ = c.Close()
		}
	}()
	url := fmt.Sprintf("http://%s/", l.Addr())
	// --noproxy '' so that curl asks the proxy even for a loopback address.
	curl := fmt.Sprintf(`curl -sS -m 30 --noproxy '' --proxy "$HTTP_PROXY" %s`, url)
	bash := func(id, cmd string) acptest.Reply {
		return acptest.Tool(id, "bash", map[string]any{"command": cmd, "description": "try"})
	}
	model := acptest.New(
		bash("ro", "echo a > a.txt"), acptest.Text("a"),
		bash("ww", "echo b > b.txt"), acptest.Text("b"),
		bash("net1", curl), acptest.Text("asked"),
		bash("net2", curl), acptest.Text("remembered"),
		bash("net3", curl), acptest.Text("refused"),
	)
	defer model.Close()
	e := newE2E(t, model)
	r := e.raw()
	defer r.close()
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	r.response(1)
	newSession := func(id int) (string, map[string]any) {
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, id, e.dir))
		res := r.response(id)["result"].(map[string]any)
		return res["sessionId"].(string), res
	}
	a, res := newSession(2)
	opt := sandboxOption(t, res["configOptions"])
	if opt["currentValue"] != "workspace-write" || opt["_meta"].(map[string]any)["enforcing"] != true {
		t.Fatalf("a new session's sandbox option: %v", opt)
	}
	if sb := res["_meta"].(map[string]any)["dsh"].(map[string]any)["sandbox"].(map[string]any); sb["mode"] != "workspace-write" || sb["enforcing"] != true {
		t.Fatalf("a new session's _meta: %v", res["_meta"])
	}

	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"session/set_config_option","params":{"sessionId":%q,"configId":"sandbox","value":"read-only"}}`, a))
	// The response and the session_info_update, in either order.
	var answered, told bool
	r.until(func(m map[string]any) bool {
		if m["id"] == float64(3) && m["method"] == nil {
			if opt := sandboxOption(t, m["result"].(map[string]any)["configOptions"]); opt["currentValue"] != "read-only" {
				t.Fatalf("after set_config_option: %v", opt)
			}
			answered = true
		}
		p, _ := m["params"].(map[string]any)
		u, _ := p["update"].(map[string]any)
		if m["method"] == "session/update" && p["sessionId"] == a && u["sessionUpdate"] == "session_info_update" {
			sb, _ := u["_meta"].(map[string]any)["dsh"].(map[string]any)["sandbox"].(map[string]any)
			told = sb["mode"] == "read-only" && sb["enforcing"] == true
		}
		return answered && told
	})
	r.send(`{"jsonrpc":"2.0","id":4,"method":"session/set_config_option","params":{"sessionId":"` + a + `","configId":"sandbox","value":"nope"}}`)
	if m := r.response(4); errCode(m) != -32602 {
		t.Fatalf("an unknown sandbox mode: %v", m)
	}
	b, _ := newSession(5)

	// prompt sends a prompt and answers permission requests with answer
	// (none expected when answer is ""); it returns the requests' texts.
	prompt := func(id int, sess, answer string) []string {
		t.Helper()
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"go"}]}}`, id, sess))
		var asked []string
		r.until(func(m map[string]any) bool {
			if m["method"] == "session/request_permission" {
				raw := fmt.Sprint(m["params"])
				asked = append(asked, raw)
				if answer == "" {
					t.Errorf("asked unexpectedly: %s", raw)
					answer = "reject_once"
				}
				r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"outcome":{"outcome":"selected","optionId":%q}}}`, m["id"], answer))
				return false
			}
			return m["id"] == float64(id) && m["method"] == nil
		})
		return asked
	}
	// Sandboxed commands run without asking: a's in read-only, b's not.
	prompt(10, a, "")
	prompt(11, b, "")
	if _, err := os.Stat(filepath.Join(e.dir, "a.txt")); !os.IsNotExist(err) {
		t.Errorf("the read-only session wrote a.txt (%v)", err)
	}
	if got, _ := os.ReadFile(filepath.Join(e.dir, "b.txt")); string(got) != "b\n" {
		t.Errorf("the workspace-write session's b.txt: %q", got)
	}
	if res := toolResultText(t, model, "ro"); !strings.Contains(res, "Read-only file system") && !strings.Contains(res, "Permission denied") {
		t.Errorf("the model was not told why the write failed: %s", res)
	}

	// A host nobody allowed: the user is asked, and "always" holds.
	asked := prompt(12, b, "allow_always")
	if len(asked) != 1 || !strings.Contains(asked[0], "not in sandbox.network.allow") || !strings.Contains(asked[0], "WebFetch(domain:127.0.0.1)") {
		t.Fatalf("the network question: %q", asked)
	}
	if res := toolResultText(t, model, "net1"); !strings.Contains(res, "host-reached-7") {
		t.Fatalf("the approved request did not get through: %s", res)
	}
	prompt(13, b, "")
	if res := toolResultText(t, model, "net2"); !strings.Contains(res, "host-reached-7") {
		t.Fatalf("the session's approval did not hold for its next command: %s", res)
	}
	// Another session was not approved: its user says no.
	if asked := prompt(14, a, "reject_once"); len(asked) != 1 {
		t.Fatalf("session a was not asked: %q", asked)
	}
	if res := toolResultText(t, model, "net3"); strings.Contains(res, "host-reached-7") || !strings.Contains(res, "not in sandbox.network.allow") {
		t.Fatalf("the refused request: %s", res)
	}
}

// sandboxOption finds the "sandbox" config option.
func sandboxOption(t *testing.T, opts any) map[string]any {
	t.Helper()
	list, _ := opts.([]any)
	for _, o := range list {
		if m, _ := o.(map[string]any); m["id"] == "sandbox" {
			return m
		}
	}
	t.Fatalf("no sandbox config option in %v", opts)
	return nil
}

// toolResultText is what the model read back for the call id.
func toolResultText(t *testing.T, model *acptest.Server, id string) string {
	t.Helper()
	for _, req := range model.Requests() {
		msgs, _ := req["messages"].([]any)
		for _, m := range msgs {
			mm, _ := m.(map[string]any)
			if mm["role"] == "tool" && mm["tool_call_id"] == id {
				return fmt.Sprint(mm["content"])
			}
		}
	}
	t.Fatalf("no result of %s reached the model", id)
	return ""
}
