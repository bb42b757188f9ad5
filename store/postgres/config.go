package postgres

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dshq/dsh/settings"
)

// EnvURL is the environment variable that holds the connection string when
// the user settings do not (it wins over them, so a deployment can inject
// it without writing a file).
const EnvURL = "DSH_DATABASE_URL"

// EnvHost overrides the host identity that leases record (default: the
// hostname). Two processes with different identities never treat each
// other's leases as their own machine's.
const EnvHost = "DSH_HOST_ID"

// Config is the "postgres" section of the user settings:
//
//	"sessionStore": "postgres",
//	"postgres": {"url": "postgres://dsh@db.internal/dsh", "schema": "dsh", "leaseTTL": "30s"}
//
// It is read only from the user's own settings (never a project's), since
// it decides where every session of the user goes and carries credentials.
type Config struct {
	// URL is the connection string (a postgres:// URL or key=value pairs,
	// as libpq takes them; PGPASSWORD and ~/.pgpass work too).
	// DSH_DATABASE_URL, when set, wins.
	URL string `json:"url,omitempty"`
	// Schema holds dsh's tables (default "dsh"), so dsh can share a
	// database with other applications.
	Schema string `json:"schema,omitempty"`
	// LeaseTTL is how long a writer lease outlives its holder's last
	// renewal (default 30s): the time another host waits before resuming
	// a session whose host died.
	LeaseTTL Duration `json:"leaseTTL,omitempty"`
	// Host is the host identity leases record (default: DSH_HOST_ID, then
	// the hostname).
	Host string `json:"host,omitempty"`
	// MaxConns bounds the connection pool (default 8).
	MaxConns int `json:"maxConns,omitempty"`
}

// Duration is a time.Duration that reads and writes as a Go duration
// string ("30s", "1m30s").
type Duration time.Duration

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration such as \"30s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Key is the "postgres" settings section. Only the user's own layers (user
// settings, --settings) set it: a project or local file that does gets a
// warning and is ignored, since it would send every session of the machine
// to a database of the project's choosing, and it carries credentials.
var Key = settings.Key[Config]{
	Name:     "postgres",
	Validate: Config.validate,
	Policy: func(layer settings.Layer, path string, c Config) (Config, bool, string) {
		if !layer.Project() {
			return c, true, ""
		}
		return Config{}, false, fmt.Sprintf("settings: ignoring \"postgres\" in %s: the session store is configured in your user settings or --settings", path)
	},
}

func (c Config) validate() error {
	if c.LeaseTTL < 0 {
		return settings.Invalid("leaseTTL", "must not be negative")
	}
	if c.MaxConns < 0 {
		return settings.Invalid("maxConns", "must not be negative")
	}
	if c.Schema != "" {
		if err := checkSchema(c.Schema); err != nil {
			return settings.Invalid("schema", "%s", strings.TrimPrefix(err.Error(), "postgres: "))
		}
	}
	return nil
}

// Resolve applies the environment (DSH_DATABASE_URL, DSH_HOST_ID; getenv nil
// reads the process's) and checks that a connection string is set.
func (c Config) Resolve(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if u := getenv(EnvURL); u != "" {
		c.URL = u
	}
	if h := getenv(EnvHost); h != "" {
		c.Host = h
	}
	if err := c.validate(); err != nil {
		return c, fmt.Errorf("postgres: settings: %w", err)
	}
	if c.URL == "" {
		return c, fmt.Errorf("postgres: no connection string: set %s or \"postgres\": {\"url\": …} in your user settings", EnvURL)
	}
	return c, nil
}

// Options turns the settings into backend options.
func (c Config) Options() Options {
	return Options{URL: c.URL, Schema: c.Schema, LeaseTTL: time.Duration(c.LeaseTTL), Host: c.Host, MaxConns: c.MaxConns}
}

var schemaName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z_][a-z0-9_]{0,47}$`) })

func checkSchema(s string) error {
	if !schemaName().MatchString(s) {
		return fmt.Errorf("postgres: schema %q: want lower-case letters, digits and underscores (at most 48, not starting with a digit)", s)
	}
	return nil
}

// Redact returns a connection string fit for a log line or an error
// message: the password (of a URL or a key=value string) replaced by
// "xxxxx".
func Redact(conn string) string {
	if u, err := url.Parse(conn); err == nil && u.Scheme != "" && strings.Contains(conn, "://") {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	conn = urlPassword().ReplaceAllString(conn, "${1}xxxxx@")
	return kvPassword().ReplaceAllString(conn, "${1}xxxxx")
}

var (
	kvPassword  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)`) })
	urlPassword = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(://[^:/@]*:)[^@]*@`) })
)

// secretScrubber removes the connection's password from error texts: the
// driver redacts what it quotes, best effort, and a password must never
// reach a log, an event or a terminal.
type secretScrubber struct{ secret string }

func newScrubber(cfg *pgconn.Config) secretScrubber {
	if cfg == nil || len(cfg.Password) < 3 {
		return secretScrubber{}
	}
	return secretScrubber{secret: cfg.Password}
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

func (s secretScrubber) scrub(err error) error {
	if err == nil || s.secret == "" || !strings.Contains(err.Error(), s.secret) {
		return err
	}
	return &scrubbedError{msg: strings.ReplaceAll(err.Error(), s.secret, "xxxxx"), err: err}
}
