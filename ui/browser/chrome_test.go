package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// One Chromium serves every test of the package (each test gets its own
// tab in its own browser context), started on first use and stopped by
// TestMain.
var chrome struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	err    error
	dir    string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if chrome.cancel != nil {
		chrome.cancel()
	}
	if chrome.dir != "" {
		os.RemoveAll(chrome.dir)
	}
	os.Exit(code)
}

// chromiumPath is Debian's chromium (scripts/test.sh installs it), or
// $DSH_CHROMIUM.
func chromiumPath() string {
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

// page is a browser tab for one test.
type page struct {
	t   testing.TB
	ctx context.Context
	mu  sync.Mutex
	// errors are uncaught exceptions and console errors the page reported.
	errors []string
	shots  int
}

// newPage opens a tab (a fresh browser context: no cookies or storage
// shared with other tests) with the viewport w×h. Without Chromium the
// test is skipped, unless DSH_TEST_BROWSER=required (scripts/test.sh sets
// it, so CI cannot go green without the browser tests).
func newPage(t testing.TB, w, h int64) *page {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("DSH_TEST_BROWSER") == "required" {
			t.Fatal("chromium is not installed (DSH_TEST_BROWSER=required); apt-get install chromium")
		}
		t.Skip("chromium is not installed (scripts/test.sh installs it)")
	}
	chrome.once.Do(func() {
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
	})
	if chrome.err != nil {
		t.Fatalf("starting chromium: %v", chrome.err)
	}
	ctx, cancel := chromedp.NewContext(chrome.ctx, chromedp.WithNewBrowserContext())
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancel() })
	p := &page{t: t, ctx: ctx}
	err := chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			p.mu.Lock()
			p.errors = append(p.errors, "exception: "+e.ExceptionDetails.Text+" "+describeException(e.ExceptionDetails))
			p.mu.Unlock()
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledType("error") {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				p.mu.Lock()
				p.errors = append(p.errors, "console.error: "+strings.Join(parts, " "))
				p.mu.Unlock()
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

func describeException(d *runtime.ExceptionDetails) string {
	if d.Exception != nil {
		return d.Exception.Description
	}
	return ""
}

// run runs actions, failing the test on error.
func (p *page) run(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatalf("browser: %v (page errors: %v)", err, p.pageErrors())
	}
}

func (p *page) pageErrors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errors...)
}

// noErrors fails the test if the page threw or logged an error.
func (p *page) noErrors() {
	p.t.Helper()
	if errs := p.pageErrors(); len(errs) > 0 {
		p.t.Fatalf("the page reported errors:\n%s", strings.Join(errs, "\n"))
	}
}

// eval evaluates a JavaScript expression.
func eval[T any](p *page, js string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("evaluating %.200s: %v (page errors: %v)", js, err, p.pageErrors())
	}
	return v
}

// text returns the text content of the first element matching sel.
func (p *page) text(sel string) string {
	p.t.Helper()
	return eval[string](p, fmt.Sprintf(`(() => { const n = document.querySelector(%q); return n ? n.textContent : "<missing " + %q + ">"; })()`, sel, sel))
}

// count returns how many elements match sel.
func (p *page) count(sel string) int {
	p.t.Helper()
	return eval[int](p, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel))
}

// waitFor waits until the JavaScript condition is true.
func (p *page) waitFor(cond string) {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, err := chromedp.Run(p.ctx, chromedp.Evaluate[bool]("!!("+cond+")"))
		if err != nil {
			p.t.Fatalf("waiting for %s: %v", cond, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			body, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 3000) : ""`))
			p.t.Fatalf("timed out waiting for %s\npage errors: %v\npage text:\n%s", cond, p.pageErrors(), body)
		}
		time.Sleep(40 * time.Millisecond)
	}
}

// shot saves a screenshot of the viewport under the test's artifact
// directory (kept with go test -artifacts) and returns its path.
func (p *page) shot(name string) string {
	p.t.Helper()
	p.shots++
	buf, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatal(err)
	}
	path := filepath.Join(p.t.ArtifactDir(), fmt.Sprintf("%02d-%s.png", p.shots, name))
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		p.t.Fatal(err)
	}
	return path
}
