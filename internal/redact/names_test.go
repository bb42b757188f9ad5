package redact

import "testing"

// What a name or value test drops here, commands never inherit
// (bash/local) and the session log scrubs.

func TestSecretName(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "dsh_test_password",
		"GITHUB_PAT", "GH_PAT", "DB_PASS", "SMTP_PASS", "MYSQL_PWD", "DB_PWD", "PGPASSWORD", "PGPASSFILE_PASSWD",
		"NPM_CONFIG__AUTH", "npm_config__auth", "HTTP_AUTHORIZATION", "BASIC_AUTH", "REGISTRY_OAUTH",
		"GIT_SSH_PRIVATE", "SSL_PRIVATE_PEM", "SESSION_COOKIE", "GPG_PASSPHRASE",
	} {
		if !SecretName(name) {
			t.Errorf("%s kept; want it dropped", name)
		}
	}
	for _, name := range []string{
		"PWD", "OLDPWD", "PATH", "GOPATH", "HOME", "USER", "SHELL", "LANG", "TERM",
		"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "XAUTHORITY", "SSH_AUTH_SOCK",
		"FTP_PASSIVE_MODE", "PASSIVE", "COMPASS_HOME", "PATTERN", "DISPLAY", "DBUS_SESSION_BUS_ADDRESS",
	} {
		if SecretName(name) {
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
		if !URLCredentials(v) {
			t.Errorf("%q kept; want it dropped", v)
		}
	}
	for _, v := range []string{
		"", "/usr/bin:/bin", "https://example.com/a@b", "https://api.deepseek.com", "ssh://git@github.com/o/r",
		"git@github.com:o/r.git", "user@example.com", "postgres://app@db/app", "http://[::1]:8080/x", "a://",
	} {
		if URLCredentials(v) {
			t.Errorf("%q dropped; want it kept", v)
		}
	}
}
