// Package chrometest drives headless Chromium (Debian's chromium) from
// tests through chromedp. One browser serves every test of a test binary:
// it starts on first use and [Stop] (from TestMain) ends it; each test's
// [Page] is a tab in a browser context of its own, so no cookie or storage
// leaks between tests, and starting Chromium once keeps browser tests
// cheap.
package chrometest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

var chrome struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	err    error
	dir    string
}

// Stop ends the shared browser; TestMain calls it after m.Run.
func Stop() {
	if chrome.cancel != nil {
		chrome.cancel()
	}
	if chrome.dir != "" {
		os.RemoveAll(chrome.dir)
	}
}

// ProfileDir is the shared browser's profile directory (every process of
// that Chromium names it on its command line), "" before it started.
func ProfileDir() string { return chrome.dir }

// Path is Debian's chromium (scripts/test.sh installs it), or
// $DSH_CHROMIUM; "" when there is none.
func Path() string {
	if p := os.Getenv("DSH_CHROMIUM"); p != "" {
		return p
	}
	for _, p := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	return ""
}

// Page is a browser tab of one test.
type Page struct {
	T   testing.TB
	Ctx context.Context

	mu     sync.Mutex
	errors []string
	shots  int
}

// New opens a tab (a fresh browser context) with the viewport w×h.
// Without Chromium the test is skipped, unless DSH_TEST_BROWSER=required
// (scripts/test.sh sets it, so CI cannot go green without browser tests).
func New(t testing.TB, w, h int64) *Page {
	t.Helper()
	path := Path()
	if path == "" {
		if os.Getenv("DSH_TEST_BROWSER") == "required" {
			t.Fatal("chromium is not installed (DSH_TEST_BROWSER=required); apt-get install chromium")
		}
		t.Skip("chromium is not installed (scripts/test.sh installs it)")
	}
	chrome.once.Do(func() { start(path) })
	if chrome.err != nil {
		t.Fatalf("starting chromium: %v", chrome.err)
	}
	ctx, cancel := chromedp.NewContext(chrome.ctx, chromedp.WithNewBrowserContext())
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelT(); cancel() })
	p := &Page{T: t, Ctx: ctx}
	err := chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := "exception: " + d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			p.record(msg)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledType("error") {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				p.record("console.error: " + strings.Join(parts, " "))
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, h)); err != nil {
		t.Fatal(err)
	}
	return p
}

func start(path string) {
	chrome.dir, chrome.err = os.MkdirTemp("", "dsh-chromium-")
	if chrome.err != nil {
		return
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(chrome.dir),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("font-render-hinting", "none"),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	if err := chromedp.Do(browser); err != nil {
		chrome.err = err
		cancelBrowser()
		cancelAlloc()
		return
	}
	chrome.ctx = browser
	chrome.cancel = func() { cancelBrowser(); cancelAlloc() }
}

func (p *Page) record(msg string) {
	p.mu.Lock()
	p.errors = append(p.errors, msg)
	p.mu.Unlock()
}

// Run runs actions, failing the test on error.
func (p *Page) Run(actions ...chromedp.Action[chromedp.Void]) {
	p.T.Helper()
	if err := chromedp.Do(p.Ctx, actions...); err != nil {
		p.T.Fatalf("browser: %v (page errors: %v)", err, p.Errors())
	}
}

// Errors are the uncaught exceptions and console errors the page reported.
func (p *Page) Errors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errors...)
}

// NoErrors fails the test if the page threw or logged an error.
func (p *Page) NoErrors() {
	p.T.Helper()
	if errs := p.Errors(); len(errs) > 0 {
		p.T.Fatalf("the page reported errors:\n%s", strings.Join(errs, "\n"))
	}
}

// Eval evaluates a JavaScript expression (awaiting a promise).
func Eval[T any](p *Page, js string) T {
	p.T.Helper()
	v, err := chromedp.Run(p.Ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		p.T.Fatalf("evaluating %.200s: %v (page errors: %v)", js, err, p.Errors())
	}
	return v
}

// Text is the text content of the first element matching sel.
func (p *Page) Text(sel string) string {
	p.T.Helper()
	return Eval[string](p, fmt.Sprintf(`(() => { const n = document.querySelector(%q); return n ? n.textContent : "<missing " + %q + ">"; })()`, sel, sel))
}

// Count is how many elements match sel.
func (p *Page) Count(sel string) int {
	p.T.Helper()
	return Eval[int](p, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel))
}

// WaitFor waits until the JavaScript condition holds (60 s at most: a
// deadline for a hung page, not a timing assertion). A condition that
// throws (its page is still loading, say) is tried again.
func (p *Page) WaitFor(cond string) {
	p.T.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok, err := chromedp.Run(p.Ctx, chromedp.Evaluate[bool]("!!("+cond+")"))
		if ok && err == nil {
			return
		}
		if p.Ctx.Err() != nil || time.Now().After(deadline) {
			body, _ := chromedp.Run(p.Ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 3000) : ""`))
			p.T.Fatalf("timed out waiting for %s (last error: %v)\npage errors: %v\npage text:\n%s", cond, err, p.Errors(), body)
		}
		time.Sleep(40 * time.Millisecond)
	}
}

// Shot saves a screenshot of the viewport under [ArtifactDir] and returns
// its path.
func (p *Page) Shot(name string) string {
	p.T.Helper()
	p.shots++
	buf, err := chromedp.Run(p.Ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.T.Fatal(err)
	}
	path := filepath.Join(ArtifactDir(p.T), fmt.Sprintf("%02d-%s.png", p.shots, name))
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		p.T.Fatal(err)
	}
	return path
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// ArtifactDir is where a test keeps its screenshots: under
// $DSH_TEST_ARTIFACTS (named by the test) when that directory exists, else
// the test's artifact directory (kept with go test -artifacts).
func ArtifactDir(t testing.TB) string {
	t.Helper()
	if root := os.Getenv("DSH_TEST_ARTIFACTS"); root != "" {
		if st, err := os.Stat(root); err == nil && st.IsDir() {
			dir := filepath.Join(root, unsafeName.ReplaceAllString(t.Name(), "_"))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			return dir
		}
	}
	return t.ArtifactDir()
}
