package fs

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
)

// Target names a file as a provider resolved it. Targets are values: build
// them with [Provider.Resolve] (or take them from a [DirEntry]), never by
// hand, because only the provider knows how Key is formed.
type Target struct {
	// Key is the file's identity. For the local provider it is the
	// symlink-resolved absolute path (for a file that does not exist yet: the
	// resolved nearest existing ancestor plus the missing components, i.e.
	// the Key the file will have once created). Two paths naming one file
	// have the same Key. Consumers compare Keys and never parse them.
	Key string
	// Path is the absolute, lexically cleaned path the caller asked for, with
	// symlinks left alone: the spelling messages and front-ends show.
	Path string
}

// Type is the kind of a filesystem object.
type Type uint8

// Types. Sockets, FIFOs, devices and broken symlinks are TypeOther.
const (
	TypeOther Type = iota
	TypeFile
	TypeDir
)

func (t Type) String() string {
	switch t {
	case TypeFile:
		return "file"
	case TypeDir:
		return "directory"
	}
	return "other"
}

// Version identifies one state of a file's content, for freshness checks.
//
// It is metadata, not a content hash: hashing would mean reading the whole
// file on every stat, which a windowed read of a large file must not do. Size,
// nanosecond modification time and inode together catch every ordinary
// change, including atomic replacement by editors (new inode) and same-size
// rewrites on filesystems with fine-grained timestamps. The zero Version
// means "no version" (the file is absent). Versions are comparable with ==.
type Version struct {
	Size    int64
	ModTime int64 // nanoseconds since the Unix epoch
	Inode   uint64
}

// IsZero reports whether v is the zero Version.
func (v Version) IsZero() bool { return v == Version{} }

// String returns an opaque token for logs and debugging.
func (v Version) String() string { return fmt.Sprintf("%d:%d:%d", v.ModTime, v.Size, v.Inode) }

// FileID is a file's identity: the device and inode that hold it, and how
// many names (hard links) it has. Two names with the same Device and
// Inode are one file, whatever their paths say: a rule about a path is a
// rule about every name of the file it names (see the permission layer).
// The zero FileID means "not known".
type FileID struct {
	Device, Inode, Links uint64
}

// Info is cheap metadata about an existing object.
type Info struct {
	// ID is the object's identity (zero where the provider cannot tell).
	ID   FileID
	Type Type
	// Size is the size in bytes (meaningful for files).
	Size int64
	// Mode holds the permission bits (and setuid/setgid/sticky).
	Mode    fs.FileMode
	Version Version
}

// ReadRequest selects a window of lines. Lines are split on "\n"; one
// trailing "\r" is removed from each line; a final newline does not start an
// extra line, so an empty file has no lines and "a\n\n" has two ("a", "").
type ReadRequest struct {
	// Offset is the 1-based number of the first line to return; 0 means 1.
	Offset int
	// Limit is the most lines to return; 0 means no limit.
	Limit int
	// MaxLineLength is the most characters (runes) kept of one line; longer
	// lines are cut and marked [Line.Truncated]. 0 means no limit. The
	// provider never holds more than about four bytes per kept character of
	// any line, however long it is.
	MaxLineLength int
	// MaxBytes caps the window's size: the UTF-8 length of the returned
	// lines plus one per line break between them. The scan stops at the
	// first line that would exceed it ([Window.Capped]); the first line of
	// the window is always returned. 0 means no cap.
	MaxBytes int
	// CountLimit is the largest file (in bytes) whose remaining lines are
	// counted after the window is full, so that [Window.TotalLines] is the
	// file's line count. Larger files are not scanned past the window.
	CountLimit int64
}

// Line is one line of a window.
type Line struct {
	// Number is the 1-based line number in the file.
	Number int
	// Text is the line without its line ending, valid UTF-8 (see
	// [Window.InvalidUTF8]), cut to MaxLineLength characters.
	Text string
	// Truncated reports that Text was cut.
	Truncated bool
}

// Window is the outcome of [Provider.ReadLines].
type Window struct {
	Lines []Line
	// TotalLines is the number of lines scanned; it is the file's line count
	// exactly when Complete is set.
	TotalLines int
	// Complete reports that the scan reached the end of the file.
	Complete bool
	// More reports that the file has lines after the returned ones.
	More bool
	// Capped reports that the scan stopped at ReadRequest.MaxBytes.
	Capped bool
	// InvalidUTF8 reports that a returned line held bytes that are not valid
	// UTF-8; they were replaced with U+FFFD.
	InvalidUTF8 bool
	// BOM reports that the file starts with a UTF-8 byte-order mark, which
	// is not part of the first line's Text.
	BOM bool
	// Size is the file's size when it was opened.
	Size int64
	// Version is the file's version when it was opened: the version a reader
	// of this window has seen.
	Version Version
	// ID is the identity of the file that was read (the one opened, not
	// whatever its path names now).
	ID FileID
}

// Precondition decides, inside the provider's per-file critical section,
// whether a write or edit may proceed. current is the file's version, or nil
// when the file does not exist. A non-nil error aborts the operation and is
// returned to the caller unchanged. A nil Precondition allows everything.
type Precondition func(current *Version) error

// WriteResult is the outcome of [Provider.Write].
type WriteResult struct {
	// Created reports that the file did not exist before.
	Created bool
	// Version is the file's version after the write.
	Version Version
	// Before is the previous content with its byte-order mark removed and
	// CRLF line endings normalized to LF: the basis for a diff. It is nil
	// for a new file and for a previous file that was not diffable text
	// (binary, invalid UTF-8, or over the provider's size limit).
	Before *string
	// After is the written content, normalized the same way.
	After string
}

// Edit is a literal text replacement.
type Edit struct {
	// Old is the exact text to find. Line endings are matched loosely: "\n"
	// in Old also matches "\r\n" in the file, so text copied from a read
	// window matches a CRLF file.
	Old string
	// New replaces Old. It is written with the file's line endings.
	New string
	// ReplaceAll replaces every non-overlapping occurrence. Without it Old
	// must occur exactly once.
	ReplaceAll bool
}

// EditResult is the outcome of [Provider.Edit].
type EditResult struct {
	// Replacements is the number of occurrences replaced.
	Replacements int
	// Version is the file's version after the edit.
	Version Version
	// Before and After are the whole content before and after the edit,
	// byte-order mark removed and line endings normalized to LF.
	Before, After string
}

// DirEntry is one child of a listed directory.
type DirEntry struct {
	Name   string
	Type   Type
	Target Target
	// Size is set for regular files only.
	Size int64
	// Version is zero for children that could not be examined (a broken
	// symlink, a child removed during the listing).
	Version Version
}

// Provider is a filesystem backend. All methods are safe for concurrent use.
// Failures the caller should report are [*Error] values; a done context
// yields CodeAborted.
type Provider interface {
	// Resolve resolves path against cwd (absolute paths ignore it; an empty
	// cwd means the provider's default). `..` is collapsed lexically, then
	// symlinks are resolved for the Key. The file need not exist.
	Resolve(ctx context.Context, cwd, path string) (Target, error)
	// Stat returns metadata, or nil (and no error) when nothing exists at t.
	// It never reads content.
	Stat(ctx context.Context, t Target) (*Info, error)
	// ReadLines returns a window of a regular UTF-8 text file by streaming
	// it. Binary files (a NUL byte early in the file) are refused with
	// CodeNotText; invalid UTF-8 is replaced, not refused (see
	// [Window.InvalidUTF8]).
	ReadLines(ctx context.Context, t Target, req ReadRequest) (Window, error)
	// Write atomically creates or replaces the file with content, exactly as
	// given. Missing parent directories are created. An existing file keeps
	// its permission bits. check runs with the current version under the
	// file's lock.
	Write(ctx context.Context, t Target, content string, check Precondition) (WriteResult, error)
	// Edit replaces literal text in an existing file (see [Edit]) and writes
	// the result atomically, keeping line endings, byte-order mark and
	// permission bits. check runs under the file's lock before the file is
	// read, so a stale edit reports staleness, never a match failure
	// against content the caller has not seen.
	Edit(ctx context.Context, t Target, e Edit, check Precondition) (EditResult, error)
	// List returns the direct children of a directory, ordered by name
	// (bytewise), with cheap metadata. It never reads content.
	List(ctx context.Context, t Target) ([]DirEntry, error)
}

// NormalizeNewlines converts CRLF line endings to LF. Lone CRs are kept.
func NormalizeNewlines(s string) string {
	if !strings.Contains(s, "\r\n") {
		return s
	}
	return strings.ReplaceAll(s, "\r\n", "\n")
}
