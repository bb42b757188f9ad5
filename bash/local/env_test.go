package local

import (
	"slices"
	"strings"
	"testing"

	"github.com/dshq/dsh/bash"
)

func TestCredentialNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "dsh_test_password",
		"GITHUB_PAT", "GH_PAT", "DB_PASS", "SMTP_PASS", "MYSQL_PWD", "DB_PWD", "PGPASSWORD", "PGPASSFILE_PASSWD",
		"NPM_CONFIG__AUTH", "npm_config__auth", "HTTP_AUTHORIZATION", "BASIC_AUTH", "REGISTRY_OAUTH",
		"GIT_SSH_PRIVATE", "SSL_PRIVATE_PEM", "SESSION_COOKIE", "GPG_PASSPHRASE",
	} {
		if !isCredentialName(name) {
			t.Errorf("%s kept; want it dropped", name)
		}
	}
	for _, name := range []string{
		"PWD", "OLDPWD", "PATH", "GOPATH", "HOME", "USER", "SHELL", "LANG", "TERM",
		"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "XAUTHORITY", "SSH_AUTH_SOCK",
		"FTP_PASSIVE_MODE", "PASSIVE", "COMPASS_HOME", "PATTERN", "DISPLAY", "DBUS_SESSION_BUS_ADDRESS",
	} {
		if isCredentialName(name) {
			t.Errorf("%s dropped; want it kept", name)
		}
	}
}

func TestURLCredentials(t *testing.T) {
	t.Parallel()
	for _, v := range []string{
		"postgres://app:s3cret@db.internal:5432/app",
		"mysql://root:pw@localhost/db?x=1",
		"http://user:pass@proxy:3128",
		"https://ghp_abcdef@github.com/o/r.git",
		"https://key@o0.ingest.sentry.io/1",
		"redis://:hunter2@cache:6379/0",
		"es=https://a:b@h1:9200,https://h2:9200",
		"  amqp://guest:guest@rabbit/",
	} {
		if !hasURLCredentials(v) {
			t.Errorf("%q kept; want it dropped", v)
		}
	}
	for _, v := range []string{
		"", "/usr/bin:/bin", "https://example.com/a@b", "https://api.deepseek.com", "ssh://git@github.com/o/r",
		"git@github.com:o/r.git", "user@example.com", "postgres://app@db/app", "http://[::1]:8080/x", "a://",
	} {
		if hasURLCredentials(v) {
			t.Errorf("%q dropped; want it kept", v)
		}
	}
}

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
