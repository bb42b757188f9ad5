// Package pgtest gives Go tests a real PostgreSQL: the private cluster that
// scripts/test.sh starts (see the variables documented there), a fresh
// schema per test inside it, and, for tests that must stop or restart the
// server under a live session, a cluster of the test's own.
//
// Without DSH_TEST_DATABASE_URL a test that needs PostgreSQL is skipped
// with a message saying how to run it, unless DSH_TEST_POSTGRES=required
// (scripts/test.sh sets it), where it fails: CI must never pass without
// the PostgreSQL tests.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The variables scripts/test.sh exports.
const (
	EnvURL      = "DSH_TEST_DATABASE_URL"
	EnvRequired = "DSH_TEST_POSTGRES"
	EnvBin      = "DSH_TEST_PG_BIN"
	EnvUser     = "DSH_TEST_PG_USER"
)

func missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv(EnvRequired) == "required" {
		t.Fatalf("pgtest: %s is not set, but %s=required: PostgreSQL tests must run here", what, EnvRequired)
	}
	t.Skipf("pgtest: %s is not set; run ./scripts/test.sh (it starts a private PostgreSQL cluster), or point %s at a database you may create schemas in", what, EnvURL)
}

// URL returns the test cluster's connection URL, or skips (fails under
// DSH_TEST_POSTGRES=required) without one.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		missing(t, EnvURL)
	}
	return u
}

// Name returns a fresh lower-case identifier with the given prefix, unique
// across concurrently running test processes.
func Name(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// Schema returns the test cluster's URL and the name of a new, empty schema
// in it, dropped (with everything in it) when the test ends.
func Schema(t testing.TB) (dbURL, schema string) {
	t.Helper()
	dbURL = URL(t)
	schema = Name("t")
	t.Cleanup(func() { DropSchema(t, dbURL, schema) })
	return dbURL, schema
}

// Exec runs statements on a short-lived connection to dbURL.
func Exec(t testing.TB, dbURL string, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("pgtest: connecting: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// DropSchema drops schema and everything in it, if it exists.
func DropSchema(t testing.TB, dbURL, schema string) {
	t.Helper()
	Exec(t, dbURL, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
}

// Cluster is a PostgreSQL server of one test's own, for what the shared
// cluster must never see: being stopped, killed or restarted.
type Cluster struct {
	Dir      string // the cluster's root (data, socket and log below it)
	URL      string // connection URL of its "dsh" database
	Port     int
	bin      string
	as       []string // the command prefix that runs as the unprivileged user
	settings []string
}

// Start initializes and starts a private cluster under a temporary
// directory, stopped and removed when the test ends. It runs with fsync off
// (tests kill processes, not the machine) unless a setting says otherwise:
// each of settings is a server setting ("fsync=on") applied after the
// defaults.
func Start(t testing.TB, settings ...string) *Cluster {
	t.Helper()
	bin := os.Getenv(EnvBin)
	if bin == "" {
		missing(t, EnvBin)
	}
	c := &Cluster{bin: bin, settings: settings}
	root, err := os.MkdirTemp("", "dsh-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	c.Dir = root
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	if os.Geteuid() == 0 {
		name := os.Getenv(EnvUser)
		if name == "" {
			name = "postgres"
		}
		u, err := user.Lookup(name)
		if err != nil {
			t.Fatalf("pgtest: running as root needs an unprivileged user for PostgreSQL (%s): %v", EnvUser, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(root, uid, gid); err != nil {
			t.Fatal(err)
		}
		c.as = []string{"runuser", "-u", name, "--"}
	}
	pw := Name("pw")
	pwFile := filepath.Join(root, "pw")
	if err := os.WriteFile(pwFile, []byte(pw+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.run(t, filepath.Join(bin, "initdb"), "-D", c.data(), "-U", "dsh", "--pwfile="+pwFile,
		"--auth=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync")
	_ = os.Remove(pwFile)
	c.Port = freePort(t)
	c.URL = (&url.URL{Scheme: "postgres", User: url.UserPassword("dsh", pw),
		Host: "127.0.0.1:" + strconv.Itoa(c.Port), Path: "/postgres", RawQuery: "sslmode=disable"}).String()
	c.StartServer(t)
	t.Cleanup(func() { c.StopServer(t, "immediate") })
	return c
}

func (c *Cluster) data() string { return filepath.Join(c.Dir, "data") }

func (c *Cluster) run(t testing.TB, args ...string) {
	t.Helper()
	args = append(append([]string(nil), c.as...), args...)
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("pgtest: %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// StartServer starts the (stopped) server and waits until it accepts
// connections.
func (c *Cluster) StartServer(t testing.TB) {
	t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100", c.Port, c.Dir)
	for _, s := range c.settings {
		opts += " -c " + s
	}
	c.run(t, filepath.Join(c.bin, "pg_ctl"), "-D", c.data(), "-l", filepath.Join(c.Dir, "server.log"), "-w", "-t", "60", "-o", opts, "start")
}

// StopServer stops the server; mode is pg_ctl's: "fast" (disconnect
// clients, shut down cleanly) or "immediate" (as a crash would).
func (c *Cluster) StopServer(t testing.TB, mode string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(c.data(), "postmaster.pid")); err != nil {
		return
	}
	c.run(t, filepath.Join(c.bin, "pg_ctl"), "-D", c.data(), "-m", mode, "-w", "stop")
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
