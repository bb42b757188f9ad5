package cli

import (
	"fmt"
	"strings"
	"testing"
)

// An @ mention of a file longer than the read tool's window attaches what
// the read tool gives (its first 2,000 lines and its note of where to go
// on), and the transcript says that it is the start of a longer file; an
// @ mention of a directory attaches its listing.
func TestMentionCapsAndDirectoriesInTmux(t *testing.T) {
	f := newTermFixture(t, "", chatText("Read them.", 10, 1))
	var big strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&big, "big row %04d\n", i)
	}
	f.write(t, "big.txt", big.String())
	f.write(t, "pkg/alpha.go", "package pkg\n")
	f.write(t, "pkg/beta.go", "package pkg\n")
	tt := f.tmux(t, "--trust")
	tt.waitFor("local/m", "›")
	tt.text("look at @big.txt and @pkg/ please")
	tt.keys("Enter")
	tt.waitFor("attached @big.txt (the first 2000 of 5000 lines)", "attached @pkg/ (directory listing)", "Read them.")
	msgs, _ := f.model.request(0)["messages"].([]any)
	got, _ := msgs[len(msgs)-1].(map[string]any)["content"].(string)
	for _, want := range []string{"big row 0001", "big row 2000", "(Showing lines 1-2000 of 5000. Use offset=2001 to continue.)", "its entries:\nalpha.go\nbeta.go\n"} {
		if !strings.Contains(got, want) {
			t.Fatalf("the request lacks %q: %.500s…%s", want, got, got[max(0, len(got)-500):])
		}
	}
	if strings.Contains(got, "big row 2001") {
		t.Fatal("the attachment holds more than the read tool's window")
	}
	tt.text("/exit")
	tt.keys("Enter")
	tt.waitFor("DSH-EXITED:0")
}
