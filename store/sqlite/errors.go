package sqlite

import (
	"errors"
	"fmt"
	"strings"

	sqlite3 "modernc.org/sqlite/lib"
)

// DBError is an SQLite error about a session database: it names the file
// and says what to do, because "file is not a database (26)" alone leaves
// the user guessing which file, and whether anything can be done.
type DBError struct {
	Path string
	Code int // SQLite's (extended) result code
	Err  error
}

func (e *DBError) Error() string {
	msg := strings.TrimPrefix(e.Err.Error(), "sqlite: ")
	if a := advice(e.Code, e.Path); a != "" {
		msg += "; " + a
	}
	return "sqlite: " + e.Path + ": " + msg
}

func (e *DBError) Unwrap() error { return e.Err }

// advice is what to do about an error of this code.
func advice(code int, path string) string {
	switch code & 0xff {
	case sqlite3.SQLITE_FULL:
		return "the disk is full: free space on its file system and retry"
	case sqlite3.SQLITE_IOERR:
		return "reading or writing the database failed (a full or failing disk?): free space or check the disk, and retry"
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return fmt.Sprintf("the session database is damaged: move it aside (mv %q %q) and dsh starts a new one; "+
			"sessions kept elsewhere (the JSONL store, a backup copied into place) come back with `dsh sessions copy`", path, path+".damaged")
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_AUTH:
		return "dsh cannot open or write it: check the permissions of the file and of its directory"
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return "another process holds it locked: retry once that process is done"
	}
	return ""
}

// coder is an error carrying an SQLite result code (the driver's errors
// and the raw reader's).
type coder interface{ Code() int }

// wrap turns an SQLite error into a [*DBError] naming the database; other
// errors (and those already wrapped) are returned as they are.
func (b *Backend) wrap(err error) error {
	if err == nil || b.path == Memory {
		return err
	}
	var de *DBError
	if errors.As(err, &de) {
		return err
	}
	var c coder
	if !errors.As(err, &c) {
		return err
	}
	return &DBError{Path: b.path, Code: c.Code(), Err: err}
}

// rawError is an error of the raw reader, with its result code.
type rawError struct {
	code int32
	msg  string
}

func (e *rawError) Error() string { return e.msg }
func (e *rawError) Code() int     { return int(e.code) }
