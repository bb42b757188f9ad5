// Package weblogin keeps the web UI's log-ins: which bearer token a
// browser's session cookie stands for, until when. A single dsh serve
// keeps them in memory ([Memory]); a fleet of workers on one PostgreSQL
// keeps them in the database ([Postgres]), so a cookie made on one worker
// is good on every other and a log-out on any of them ends it everywhere.
//
// Neither keeps a secret: a log-in is stored under the SHA-256 of its
// cookie (a stolen table gives no cookie), and it names its token by id
// and hash (the hash the token file keeps already), never by the token
// itself. The CSRF token is derived from the cookie ([CSRF]), so no worker
// needs to store it to check it.
package weblogin

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"
)

// Login is one browser's log-in.
type Login struct {
	// TokenID and TokenHash name the bearer token the log-in was made
	// with: it lasts only while the token file still holds that token
	// (revoking the token logs it out).
	TokenID   string
	TokenHash string
	Expires   time.Time
}

// Store keeps log-ins by key (see [Key]).
type Store interface {
	// Put stores l under key, and may forget log-ins expired by now.
	Put(ctx context.Context, key string, l Login, now time.Time) error
	// Get returns the log-in under key unless it expired by now.
	Get(ctx context.Context, key string, now time.Time) (Login, bool, error)
	// Delete ends the log-in under key (none there: no error).
	Delete(ctx context.Context, key string) error
}

// Key is what a log-in is stored under: a hash of its cookie, with a
// prefix of its own so it is never the CSRF token.
func Key(cookie string) string { return digest("dsh web login\x00", cookie) }

// CSRF is the CSRF token of the log-in whose cookie this is: only a page
// of the server's own origin, given it by the server, knows it (the
// cookie is HttpOnly), and any worker that sees the cookie can check it.
func CSRF(cookie string) string { return digest("dsh web csrf\x00", cookie) }

func digest(prefix, s string) string {
	h := sha256.Sum256([]byte(prefix + s))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// Memory is a [Store] in this process's memory: log-ins end when it
// stops.
type Memory struct {
	mu sync.Mutex
	m  map[string]Login
}

// Put implements [Store]; it also forgets log-ins that expired.
func (s *Memory) Put(_ context.Context, key string, l Login, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]Login{}
	}
	for k, o := range s.m {
		if !now.Before(o.Expires) {
			delete(s.m, k)
		}
	}
	s.m[key] = l
	return nil
}

// Get implements [Store].
func (s *Memory) Get(_ context.Context, key string, now time.Time) (Login, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.m[key]
	if ok && !now.Before(l.Expires) {
		delete(s.m, key)
		return Login{}, false, nil
	}
	return l, ok, nil
}

// Delete implements [Store].
func (s *Memory) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	return nil
}
