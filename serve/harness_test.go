package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/dshq/dsh/internal/chrometest"
	"github.com/dshq/dsh/internal/dshtest"
	"github.com/dshq/dsh/serve/api"
)

func TestMain(m *testing.M) { dshtest.Main(m, "..", raceBuild, chrometest.Stop) }

// secretKey is the provider key every test server runs with: no response,
// stream or log line may carry it.
const secretKey = "sk-ant-api03-SERVE-TEST-SECRET-7f3a9c"

// proc is a running dsh serve.
type proc struct {
	t      testing.TB
	cmd    *exec.Cmd
	URL    string
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan struct{}
}

var listening = regexp.MustCompile(`listening on (https?://[^ ]+)`)

// startServe runs dsh serve in env's directory with args, on a free
// loopback port, and waits until it listens.
func startServe(t testing.TB, e *dshtest.Env, extraEnv []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(dshtest.Bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Dir = e.Dir
	cmd.Env = e.Environ(append([]string{"ANTHROPIC_API_KEY=" + secretKey}, extraEnv...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	p := &proc{t: t, cmd: cmd, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	go func() {
		_ = cmd.Wait()
		pw.Close()
		close(p.done)
	}()
	select {
	case p.URL = <-addr:
	case <-p.done:
		t.Fatalf("dsh serve exited: %s", p.Stderr())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("dsh serve did not listen: %s", p.Stderr())
	}
	t.Cleanup(func() { p.Stop() })
	return p
}

// Stderr is what the server printed so far.
func (p *proc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Stop ends the server with SIGTERM (SIGKILL after 20 s).
func (p *proc) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Kill ends the server at once, as a crash would.
func (p *proc) Kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// token makes a token with dsh serve token create.
func token(t testing.TB, e *dshtest.Env, name string, args ...string) string {
	t.Helper()
	r := e.Run("", append([]string{"serve", "token", "create", name}, args...)...)
	if r.Code != 0 {
		t.Fatalf("token create: %d %s", r.Code, r.Stderr)
	}
	return strings.TrimSpace(r.Stdout)
}

// contract is an http.RoundTripper that checks every response against
// the OpenAPI document (its status declared, its body valid) and that no
// response carries the secret; it records the operations it saw.
type contract struct {
	t      testing.TB
	doc    *openapi3.T
	router routers.Router
	base   http.RoundTripper

	mu   sync.Mutex
	seen map[string]bool
}

// The web UI's pages are HTML: their bodies are checked as strings.
func init() { openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.FileBodyDecoder) }

func newContract(t testing.TB, serverURL string) *contract {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the OpenAPI document is invalid: %v", err)
	}
	doc.Servers = openapi3.Servers{{URL: serverURL}}
	r, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &contract{t: t, doc: doc, router: r, base: http.DefaultTransport, seen: map[string]bool{}}
}

func (c *contract) client() *http.Client { return &http.Client{Transport: c} }

func (c *contract) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		if resp.StatusCode != http.StatusNotFound {
			c.t.Errorf("%s %s is not in the OpenAPI document (answered %d)", req.Method, req.URL.Path, resp.StatusCode)
		}
		return resp, nil
	}
	key := req.Method + " " + route.Path
	c.mu.Lock()
	c.seen[key] = true
	c.mu.Unlock()
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}
	streaming := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || resp.StatusCode == http.StatusSwitchingProtocols
	if streaming {
		// An endless body: check the status and content type only, and
		// the secret as it streams.
		opts.ExcludeResponseBody = true
		if err := openapi3filter.ValidateResponse(req.Context(), &openapi3filter.ResponseValidationInput{RequestValidationInput: in,
			Status: resp.StatusCode, Header: resp.Header, Body: http.NoBody, Options: opts}); err != nil {
			c.t.Errorf("%s: response %d does not match the document: %v", key, resp.StatusCode, err)
		}
		if resp.StatusCode != http.StatusSwitchingProtocols {
			resp.Body = &secretCheck{t: c.t, key: key, r: resp.Body}
		}
		return resp, nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if bytes.Contains(body, []byte(secretKey)) {
		c.t.Errorf("%s: the response carries the provider key", key)
	}
	if err := openapi3filter.ValidateResponse(req.Context(), &openapi3filter.ResponseValidationInput{RequestValidationInput: in,
		Status: resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body)), Options: opts}); err != nil {
		c.t.Errorf("%s: response %d does not match the document: %v\n%s", key, resp.StatusCode, err, body)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// missing lists the document's operations no request reached, but for
// those on paths under a skipped prefix (another test's share).
func (c *contract) missing(skip ...string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for path, item := range c.doc.Paths.Map() {
		if slices.ContainsFunc(skip, func(p string) bool { return strings.HasPrefix(path, p) }) {
			continue
		}
		for method := range item.Operations() {
			if !c.seen[method+" "+path] {
				out = append(out, method+" "+path)
			}
		}
	}
	return out
}

type secretCheck struct {
	t    testing.TB
	key  string
	r    io.ReadCloser
	tail []byte
}

func (s *secretCheck) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	buf := append(s.tail, p[:n]...)
	if bytes.Contains(buf, []byte(secretKey)) {
		s.t.Errorf("%s: the stream carries the provider key", s.key)
	}
	if len(buf) > len(secretKey) {
		buf = buf[len(buf)-len(secretKey):]
	}
	s.tail = append(s.tail[:0], buf...)
	return n, err
}

func (s *secretCheck) Close() error { return s.r.Close() }

// mkdirs makes directories under root.
func mkdirs(t testing.TB, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
