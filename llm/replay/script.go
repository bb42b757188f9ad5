// Package replay re-streams the model calls of a recorded session, so the
// real agent loop (tools, hooks, persistence and all) can run against a
// transcript with no provider and no API key. It is how snapshot fixtures
// are replayed and how a bug report's session.jsonl is turned into a
// deterministic reproduction.
//
// A fixture is a persisted JSONL session log (a header line, then one event
// per line). Each model call the loop made left a run of assistant/chunk
// events tagged with its (turn, step); [FromEvents] turns those runs back
// into a [Script], one [Entry] per call. A stream that failed mid-way left
// no finish chunk and cannot be derived; an override sidecar (a JSON array
// of entries) then says what the calls did: stream chunks, stream a prefix
// and fail ("throw"), or hang until cancelled. In-process subagents record
// their own child logs; each becomes another script.
//
// [Install] registers one llm/stream listener that answers every call from
// the scripts and never calls next, so no adapter is consulted. Calls are
// bound to scripts by [llm.Request.SessionID]: the first call from a new
// session takes the next unbound script, in first-call order, and each
// session then walks its own script.
package replay

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// Kind says what a recorded model call did.
type Kind string

// Entry kinds. The set is closed.
const (
	// KindChunks streams Chunks and ends normally (a finish-error chunk
	// included: an in-band failure replays as recorded).
	KindChunks Kind = "chunks"
	// KindThrow streams Chunks, then fails with an [llm.Error] built from
	// Message, Code and Status: a provider failure the log cannot show.
	KindThrow Kind = "throw"
	// KindHang streams a partial text block and blocks until the call is
	// cancelled: the shape of a cancel scenario.
	KindHang Kind = "hang"
)

// Entry is one model call of a script.
type Entry struct {
	Kind    Kind        `json:"kind"`
	Chunks  []llm.Chunk `json:"chunks,omitempty"`
	Message string      `json:"message,omitempty"`
	Code    string      `json:"code,omitempty"`
	Status  int         `json:"status,omitempty"`
}

// UnmarshalJSON reads an entry and rejects unknown kinds, so a typo in a
// hand-written sidecar fails at load time rather than mid-replay.
func (e *Entry) UnmarshalJSON(b []byte) error {
	type plain Entry
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	switch p.Kind {
	case KindChunks, KindThrow, KindHang:
	default:
		return fmt.Errorf("replay: unknown entry kind %q (want chunks, throw or hang)", p.Kind)
	}
	*e = Entry(p)
	return nil
}

// Script is the model calls of one recorded session, in call order.
type Script struct {
	// SessionID and CreatedAt come from the log's header; they order child
	// scripts and name them in diagnostics.
	SessionID session.ID
	CreatedAt int64
	Entries   []Entry
}

// FromEvents derives a script from a session's events: every consecutive
// run of assistant/chunk events with the same (turn, step) is one model
// call. Other events are ignored. Each run must end with a finish chunk; a
// run without one is a stream that failed, which the log cannot replay.
func FromEvents(events []session.Event) (Script, error) {
	var (
		sc      Script
		cur     []llm.Chunk
		curTurn int
		curStep int
	)
	closeRun := func() error {
		if len(cur) == 0 {
			return nil
		}
		if cur[len(cur)-1].Type != llm.ChunkFinish {
			return fmt.Errorf("replay: model call %d/%d ended without a finish chunk (a thrown stream); this scenario needs a replay.override.json sidecar", curTurn, curStep)
		}
		sc.Entries = append(sc.Entries, Entry{Kind: KindChunks, Chunks: cur})
		cur = nil
		return nil
	}
	for _, e := range events {
		if e.Type != session.TypeAssistantChunk {
			continue
		}
		ac, err := session.Decode[session.AssistantChunk](e)
		if err != nil {
			return Script{}, fmt.Errorf("replay: %w", err)
		}
		if len(cur) > 0 && (ac.Turn != curTurn || ac.Step != curStep) {
			if err := closeRun(); err != nil {
				return Script{}, err
			}
		}
		curTurn, curStep = ac.Turn, ac.Step
		cur = append(cur, ac.Chunk)
	}
	if err := closeRun(); err != nil {
		return Script{}, err
	}
	return sc, nil
}

// ParseLog reads a JSONL session log: blank lines are skipped, the first
// line is the header, every other line is an event. A malformed line is an
// error naming its line number, never silently dropped.
func ParseLog(data []byte) (session.Header, []session.Event, error) {
	var (
		h      session.Header
		events []session.Event
		header = true
	)
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if header {
			if err := json.Unmarshal(line, &h); err != nil {
				return session.Header{}, nil, fmt.Errorf("replay: line %d: malformed session header: %w", i+1, err)
			}
			header = false
			continue
		}
		var e session.Event
		if err := json.Unmarshal(line, &e); err != nil {
			return session.Header{}, nil, fmt.Errorf("replay: line %d: malformed event: %w", i+1, err)
		}
		events = append(events, e)
	}
	if header {
		return session.Header{}, nil, errors.New("replay: empty session log (no header line)")
	}
	return h, events, nil
}

// LoadFile loads the scripts of a recorded run: the primary session's
// script first, then one per child log (in-process subagents), ordered by
// creation time and then id, which is the order their first model calls
// arrived in when recording.
//
// When overridePath names an existing file, the primary script is read
// from it (a JSON array of entries) instead of being derived from path;
// an empty or missing overridePath derives it. A child log's script is
// derived from the child's own events only: a fork's inherited prefix
// (header seedLength) holds the parent's model calls, not the child's.
func LoadFile(path, overridePath string, childPaths ...string) ([]Script, error) {
	if path == "" {
		return nil, errors.New("replay: a fixture path is required (LoadFile path or $DSH_SNAPSHOT_FILE)")
	}
	primary, err := loadPrimary(path, overridePath)
	if err != nil {
		return nil, err
	}
	children := make([]Script, 0, len(childPaths))
	for _, p := range childPaths {
		h, events, err := readLog(p)
		if err != nil {
			return nil, err
		}
		if h.SeedLength > len(events) {
			return nil, fmt.Errorf("replay: %s: seedLength %d exceeds the log's %d events", p, h.SeedLength, len(events))
		}
		sc, err := FromEvents(events[h.SeedLength:])
		if err != nil {
			return nil, fmt.Errorf("%w (child log %s)", err, p)
		}
		sc.SessionID, sc.CreatedAt = h.ID, h.CreatedAt
		children = append(children, sc)
	}
	slices.SortStableFunc(children, func(a, b Script) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), strings.Compare(string(a.SessionID), string(b.SessionID)))
	})
	return append([]Script{primary}, children...), nil
}

// LoadEnv is LoadFile configured from the environment: DSH_SNAPSHOT_FILE,
// DSH_SNAPSHOT_OVERRIDE and DSH_SNAPSHOT_CHILD_FILES (a list separated by
// the OS path-list separator). Snapshot test runners set these so one
// binary replays any fixture.
func LoadEnv() ([]Script, error) {
	return LoadFile(os.Getenv("DSH_SNAPSHOT_FILE"), os.Getenv("DSH_SNAPSHOT_OVERRIDE"),
		filepath.SplitList(os.Getenv("DSH_SNAPSHOT_CHILD_FILES"))...)
}

func loadPrimary(path, overridePath string) (Script, error) {
	if overridePath != "" {
		data, err := os.ReadFile(overridePath)
		switch {
		case err == nil:
			var entries []Entry
			if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("[")) {
				return Script{}, fmt.Errorf("replay: override is not a JSON array: %s", overridePath)
			}
			if err := json.Unmarshal(data, &entries); err != nil {
				return Script{}, fmt.Errorf("replay: reading override %s: %w", overridePath, err)
			}
			return Script{Entries: entries}, nil
		case !errors.Is(err, fs.ErrNotExist):
			return Script{}, fmt.Errorf("replay: reading override: %w", err)
		}
	}
	h, events, err := readLog(path)
	if err != nil {
		return Script{}, err
	}
	sc, err := FromEvents(events)
	if err != nil {
		return Script{}, err
	}
	sc.SessionID, sc.CreatedAt = h.ID, h.CreatedAt
	return sc, nil
}

func readLog(path string) (session.Header, []session.Event, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return session.Header{}, nil, fmt.Errorf("replay: fixture not found: %s (%w)", path, fs.ErrNotExist)
	}
	if err != nil {
		return session.Header{}, nil, fmt.Errorf("replay: %w", err)
	}
	h, events, err := ParseLog(data)
	if err != nil {
		return session.Header{}, nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return h, events, nil
}
