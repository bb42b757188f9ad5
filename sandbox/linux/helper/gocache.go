//go:build linux

package helper

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// GoCacheArg is the hidden subcommand that serves the Go build cache of
// sandboxed commands: GOCACHEPROG="/run/dsh __sandbox-gocache".
//
// Why: a sandboxed `go build` cannot write the user's build cache, and
// must not — a later unsandboxed build would trust what a confined command
// put there, a way out of the sandbox. A private cache alone would make
// every first build inside recompile the standard library (a minute on a
// busy machine). So the go command asks this program instead: it answers
// from the sandbox's private cache, then from the user's own cache, read
// only, and stores every new entry in the private cache. The user's cache
// is never written; the private one is read only by sandboxed builds.
const GoCacheArg = "__sandbox-gocache"

// Environment of the cache program, set for sandboxed commands.
const (
	EnvGoCacheSeed = "DSH_SANDBOX_GOCACHE_SEED" // the user's GOCACHE, read only
)

// goRequest and goResponse are the GOCACHEPROG protocol's messages
// (cmd/go/internal/cacheprog).
type goRequest struct {
	ID       int64
	Command  string
	ActionID []byte `json:",omitempty"`
	OutputID []byte `json:",omitempty"`
	BodySize int64  `json:",omitempty"`
}

type goResponse struct {
	ID            int64
	Err           string     `json:",omitempty"`
	KnownCommands []string   `json:",omitempty"`
	Miss          bool       `json:",omitempty"`
	OutputID      []byte     `json:",omitempty"`
	Size          int64      `json:",omitempty"`
	Time          *time.Time `json:",omitempty"`
	DiskPath      string     `json:",omitempty"`
}

// gocache serves the protocol on stdin and stdout: dir is the private
// cache (GOCACHE), seed the user's cache.
func gocache() int {
	dir := os.Getenv("GOCACHE")
	if dir == "" || !filepath.IsAbs(dir) {
		fmt.Fprintln(os.Stderr, "dsh sandbox: go cache: GOCACHE is not an absolute directory")
		return 2
	}
	c := &goCache{dir: dir, seed: os.Getenv(EnvGoCacheSeed)}
	if err := c.serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "dsh sandbox: go cache:", err)
		return 1
	}
	return 0
}

type goCache struct {
	dir, seed string
}

func (c *goCache) serve(in io.Reader, out io.Writer) error {
	bw := bufio.NewWriter(out)
	enc := json.NewEncoder(bw)
	send := func(r goResponse) error {
		if err := enc.Encode(r); err != nil {
			return err
		}
		return bw.Flush()
	}
	if err := send(goResponse{KnownCommands: []string{"get", "put", "close"}}); err != nil {
		return err
	}
	dec := json.NewDecoder(bufio.NewReaderSize(in, 64<<10))
	for {
		var req goRequest
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		var body []byte
		if req.Command == "put" && req.BodySize > 0 {
			var b64 string
			if err := dec.Decode(&b64); err != nil {
				return fmt.Errorf("reading the body of request %d: %w", req.ID, err)
			}
			b, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				return fmt.Errorf("decoding the body of request %d: %w", req.ID, err)
			}
			body = b
		}
		resp := goResponse{ID: req.ID}
		switch req.Command {
		case "get":
			c.get(req, &resp)
		case "put":
			if err := c.put(req, body, &resp); err != nil {
				resp.Err = err.Error()
			}
		case "close":
			return send(resp)
		default:
			resp.Err = "unknown command " + strconv.Quote(req.Command)
		}
		if err := send(resp); err != nil {
			return err
		}
	}
}

// get answers from the private cache, then from the seed.
func (c *goCache) get(req goRequest, resp *goResponse) {
	for _, dir := range []string{c.dir, c.seed} {
		if dir == "" {
			continue
		}
		if e, ok := readEntry(dir, req.ActionID); ok {
			t := e.time
			resp.OutputID, resp.Size, resp.Time, resp.DiskPath = e.out, e.size, &t, e.path
			return
		}
	}
	resp.Miss = true
}

// put stores an output and its entry in the private cache, each written
// to a temporary file and renamed, so a concurrent reader never sees half.
func (c *goCache) put(req goRequest, body []byte, resp *goResponse) error {
	if len(req.ActionID) == 0 || len(req.OutputID) == 0 {
		return errors.New("put without an action or output id")
	}
	if int64(len(body)) != req.BodySize {
		return fmt.Errorf("body of %d bytes, want %d", len(body), req.BodySize)
	}
	out := cachePath(c.dir, req.OutputID, "d")
	if fi, err := os.Stat(out); err != nil || fi.Size() != req.BodySize {
		if err := writeAtomic(out, body); err != nil {
			return err
		}
	}
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", req.ActionID, req.OutputID, req.BodySize, time.Now().UnixNano())
	if err := writeAtomic(cachePath(c.dir, req.ActionID, "a"), []byte(entry)); err != nil {
		return err
	}
	resp.DiskPath = out
	return nil
}

// cachePath is where the go command's own disk cache keeps id: the first
// two hex digits name a subdirectory.
func cachePath(dir string, id []byte, kind string) string {
	h := hex.EncodeToString(id)
	if len(h) < 2 {
		h = "00" + h
	}
	return filepath.Join(dir, h[:2], h+"-"+kind)
}

type goEntry struct {
	out  []byte
	size int64
	time time.Time
	path string
}

// readEntry reads an action entry in the go command's format ("v1 <action
// hex> <output hex> <size, 20 wide> <unix nanoseconds, 20 wide>\n") and
// checks that its output file is there with the size it records.
func readEntry(dir string, id []byte) (goEntry, bool) {
	b, err := os.ReadFile(cachePath(dir, id, "a"))
	if err != nil || len(b) > 256 {
		return goEntry{}, false
	}
	f := strings.Fields(string(b))
	if len(f) != 5 || f[0] != "v1" || f[1] != hex.EncodeToString(id) {
		return goEntry{}, false
	}
	out, err := hex.DecodeString(f[2])
	if err != nil || len(out) == 0 {
		return goEntry{}, false
	}
	size, err1 := strconv.ParseInt(f[3], 10, 64)
	nanos, err2 := strconv.ParseInt(f[4], 10, 64)
	if err1 != nil || err2 != nil || size < 0 {
		return goEntry{}, false
	}
	path := cachePath(dir, out, "d")
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
		return goEntry{}, false
	}
	return goEntry{out: out, size: size, time: time.Unix(0, nanos), path: path}, true
}

func writeAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	return nil
}
