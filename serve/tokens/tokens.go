// Package tokens keeps dsh serve's bearer tokens: `dsh serve token create`
// makes one and prints it once; the file under $DSH_HOME keeps only its
// SHA-256, its name, its access (read or full) and the workspaces it may
// use. The server re-reads the file when it changes, so a revoked token
// stops working at its next request without a restart.
//
// A token is "dsh_" + an id of 8 hex digits + "_" + 32 random bytes in hex.
// The id finds the entry; the hash of the whole token is compared in
// constant time. The secret has 256 bits of entropy, so a plain SHA-256
// is enough: there is nothing to brute-force that a slow hash would slow.
package tokens

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/internal/private"
)

// Access levels.
const (
	Read = "read"
	Full = "full"
)

// Token is one stored token (never the secret).
type Token struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Hash is the hex SHA-256 of the whole token.
	Hash   string `json:"hash"`
	Access string `json:"access"`
	// Workspaces are the directories (absolute, cleaned) the token may
	// use; empty: every root of the server.
	Workspaces []string `json:"workspaces,omitempty"`
	Created    int64    `json:"created"`
}

// ReadOnly reports whether the token may only read.
func (t Token) ReadOnly() bool { return t.Access != Full }

type file struct {
	Tokens []Token `json:"tokens"`
}

// Store is the token file.
type Store struct {
	path string

	// mu guards stamp and byID. Every request of every client checks its
	// token, and the stat that tells whether the file changed runs before
	// any lock: under one exclusive lock held across that stat, requests
	// queued behind each other (and behind a descheduled holder). Only a
	// changed file takes the write lock, to read it again.
	mu    sync.RWMutex
	stamp stamp // the file's mtime and size when last read
	byID  map[string]Token
}

// Path is where a home keeps its tokens.
func Path(home string) string { return filepath.Join(home, "serve", "tokens.json") }

// Open returns the store of the file at path (it need not exist yet).
func Open(path string) *Store { return &Store{path: path} }

// ErrUnknown says no token has that name or id.
var ErrUnknown = errors.New("tokens: no such token")

// Keeper keeps tokens: the file ([Store]) for one server, the database
// ([Postgres]) for a fleet of workers on one PostgreSQL, where any worker
// must authenticate any token and a revocation on one holds on all.
type Keeper interface {
	// Create makes a token, stores its hash and returns the token itself:
	// the only time it is ever seen.
	Create(name, access string, workspaces []string, now time.Time) (string, Token, error)
	// Revoke removes the token with this name or id.
	Revoke(nameOrID string) (Token, error)
	// List returns the stored tokens.
	List() ([]Token, error)
	// Check returns the token raw is, or false.
	Check(raw string) (Token, bool)
	// Current returns the token with this id while it is still stored
	// with this hash (see [Store.Current]).
	Current(id, hash string) (Token, bool)
}

// newToken makes a token and the entry that stores it.
func newToken(name, access string, workspaces []string, now time.Time) (string, Token, error) {
	if name == "" {
		return "", Token{}, errors.New("tokens: a token needs a name")
	}
	if access != Read && access != Full {
		return "", Token{}, fmt.Errorf("tokens: access must be %q or %q", Read, Full)
	}
	for i, w := range workspaces {
		if !filepath.IsAbs(w) {
			return "", Token{}, fmt.Errorf("tokens: workspace %q is not an absolute path", w)
		}
		workspaces[i] = filepath.Clean(w)
	}
	var id [4]byte
	var secret [32]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", Token{}, err
	}
	if _, err := rand.Read(secret[:]); err != nil {
		return "", Token{}, err
	}
	raw := "dsh_" + hex.EncodeToString(id[:]) + "_" + hex.EncodeToString(secret[:])
	return raw, Token{ID: hex.EncodeToString(id[:]), Name: name, Hash: hash(raw), Access: access, Workspaces: workspaces, Created: now.UnixMilli()}, nil
}

// idOf is the id part of a token, or false when raw is not shaped as one.
func idOf(raw string) (string, bool) {
	rest, ok := strings.CutPrefix(raw, "dsh_")
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, "_")
	return id, ok
}

// matches reports whether raw hashes to t's hash, in constant time.
func matches(t Token, raw string) bool {
	want, _ := hex.DecodeString(t.Hash)
	got := sha256.Sum256([]byte(raw))
	return subtle.ConstantTimeCompare(want, got[:]) == 1
}

// Create implements [Keeper].
func (s *Store) Create(name, access string, workspaces []string, now time.Time) (string, Token, error) {
	raw, t, err := newToken(name, access, workspaces, now)
	if err != nil {
		return "", Token{}, err
	}
	err = s.update(func(f *file) error {
		if slices.ContainsFunc(f.Tokens, func(o Token) bool { return o.Name == name }) {
			return fmt.Errorf("tokens: a token named %q exists already (revoke it first)", name)
		}
		f.Tokens = append(f.Tokens, t)
		return nil
	})
	if err != nil {
		return "", Token{}, err
	}
	return raw, t, nil
}

// Revoke removes the token with this name or id.
func (s *Store) Revoke(nameOrID string) (Token, error) {
	var gone Token
	err := s.update(func(f *file) error {
		i := slices.IndexFunc(f.Tokens, func(t Token) bool { return t.Name == nameOrID || t.ID == nameOrID })
		if i < 0 {
			return fmt.Errorf("%w %q", ErrUnknown, nameOrID)
		}
		gone = f.Tokens[i]
		f.Tokens = slices.Delete(f.Tokens, i, i+1)
		return nil
	})
	return gone, err
}

// List returns the stored tokens.
func (s *Store) List() ([]Token, error) {
	f, err := s.read()
	return f.Tokens, err
}

// Check returns the token raw is, or false. It re-reads the file when it
// changed since the last check.
func (s *Store) Check(raw string) (Token, bool) {
	id, ok := idOf(raw)
	if !ok {
		return Token{}, false
	}
	t, ok := s.lookup(id)
	if !ok || !matches(t, raw) {
		return Token{}, false
	}
	return t, true
}

// Current returns the token with this id while the file still holds it
// with this hash: what a web log-in, which keeps no secret, checks on
// every request, so revoking the token (or replacing it) ends the log-in.
func (s *Store) Current(id, hash string) (Token, bool) {
	t, ok := s.lookup(id)
	if !ok || subtle.ConstantTimeCompare([]byte(t.Hash), []byte(hash)) != 1 {
		return Token{}, false
	}
	return t, true
}

// lookup finds a token by id in the file as it is now: false when the
// file has no such token or cannot be read.
func (s *Store) lookup(id string) (Token, bool) {
	st, err := s.statStamp()
	if err != nil || st == (stamp{}) {
		return Token{}, false
	}
	s.mu.RLock()
	if st == s.stamp && s.byID != nil {
		t, ok := s.byID[id]
		s.mu.RUnlock()
		return t, ok
	}
	s.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refreshLocked() != nil {
		return Token{}, false
	}
	t, ok := s.byID[id]
	return t, ok
}

// stamp is a file's mtime and size: what says it changed. Every request
// compares one, so it is two integers, not text.
type stamp struct{ mtime, size int64 }

// statStamp is the file's stamp (the zero stamp when there is no file).
func (s *Store) statStamp() (stamp, error) {
	st, err := os.Stat(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return stamp{}, nil
	}
	if err != nil {
		return stamp{}, err
	}
	return stamp{st.ModTime().UnixNano(), st.Size()}, nil
}

func (s *Store) refreshLocked() error {
	st, err := s.statStamp()
	if err != nil {
		return err
	}
	if st == (stamp{}) {
		s.byID, s.stamp = nil, stamp{}
		return nil
	}
	if st == s.stamp && s.byID != nil {
		return nil
	}
	f, err := s.read()
	if err != nil {
		return err
	}
	s.byID = map[string]Token{}
	for _, t := range f.Tokens {
		s.byID[t.ID] = t
	}
	s.stamp = st
	return nil
}

func (s *Store) read() (file, error) {
	var f file
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("tokens: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("tokens: %s: %w", s.path, err)
	}
	return f, nil
}

func (s *Store) update(fn func(*file) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.read()
	if err != nil {
		return err
	}
	if err := fn(&f); err != nil {
		return err
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := private.MkdirAll(filepath.Dir(s.path)); err != nil {
		return fmt.Errorf("tokens: %w", err)
	}
	if err := private.WriteFile(s.path, append(b, '\n')); err != nil {
		return fmt.Errorf("tokens: %w", err)
	}
	s.stamp = stamp{} // re-read at the next check
	return nil
}

func hash(raw string) string {
	h := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(h[:])
}
