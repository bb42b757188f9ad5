package browser

import (
	"os"
	"testing"

	"github.com/dshq/dsh/internal/chrometest"
)

// One Chromium serves every test of the package (internal/chrometest: each
// test's page is a tab in a browser context of its own); it stops here.
func TestMain(m *testing.M) {
	code := m.Run()
	chrometest.Stop()
	os.Exit(code)
}
