package local

import (
	"slices"
	"strings"
	"testing"

	"github.com/dshq/dsh/bash"
)

func TestChildEnvDropsExtraNamesAndURLCredentials(t *testing.T) {
	t.Parallel()
	parent := []string{
		"PATH=/bin", "PWD=/work", "OLDPWD=/", "GIT_AUTHOR_NAME=me", "MY_PROVIDER_AUTHX=custom",
		"HEADER_VAR=abc", "DATABASE_URL=postgres://u:p@h/db", "GITHUB_PAT=ghp_x", "DB_PASS=p", "CDPATH=/etc",
	}
	got := childEnv(parent, []string{"MY_PROVIDER_AUTHX", "HEADER_VAR"}, map[string]string{"HEADER_VAR": "explicit"})
	for _, kv := range []string{"PATH=/bin", "PWD=/work", "OLDPWD=/", "GIT_AUTHOR_NAME=me", "HEADER_VAR=explicit"} {
		if !slices.Contains(got, kv) {
			t.Errorf("%s missing from %q", kv, got)
		}
	}
	for _, bad := range []string{"MY_PROVIDER_AUTHX=", "DATABASE_URL=", "GITHUB_PAT=", "DB_PASS=", "CDPATH="} {
		if slices.ContainsFunc(got, func(kv string) bool { return strings.HasPrefix(kv, bad) }) {
			t.Errorf("%s… not dropped: %q", bad, got)
		}
	}
}

// Config.ScrubEnv reaches the commands.
func TestRunScrubEnv(t *testing.T) {
	// t.Setenv: not parallel.
	t.Setenv("DSH_TEST_CUSTOM_PROVIDER", "leak")
	t.Setenv("DSH_TEST_VISIBLE", "visible")
	e := newExec(t, Config{ScrubEnv: []string{"DSH_TEST_CUSTOM_PROVIDER"}})
	res := run(t, e, bash.ExecRequest{Command: `echo "${DSH_TEST_CUSTOM_PROVIDER-absent} $DSH_TEST_VISIBLE"`})
	if res.Stdout.Text != "absent visible\n" {
		t.Errorf("output %q", res.Stdout.Text)
	}
}
