package fs

import (
	"errors"
	"fmt"

	"github.com/dshq/dsh/llm"
)

// ErrorName is the harness error name of every filesystem error; tool results
// record it as error.name.
const ErrorName = "FsError"

// Error codes. They are part of the seam: policies, hooks and front-ends act
// on them, so providers must use them for the conditions described.
const (
	// CodeNotFound: the file or directory does not exist, a parent path
	// segment is not a directory, the path is blank, or a read offset lies
	// past the end of the file.
	CodeNotFound = "FS_NOT_FOUND"
	// CodeNotRegularFile: a file operation met a directory, device, socket or
	// FIFO.
	CodeNotRegularFile = "FS_NOT_REGULAR_FILE"
	// CodeNotDirectory: a listing met something that is not a directory.
	CodeNotDirectory = "FS_NOT_DIRECTORY"
	// CodeNotText: the file is binary (NUL bytes) or, for edits, not valid
	// UTF-8.
	CodeNotText = "FS_NOT_TEXT"
	// CodeTooLarge: the file or content exceeds the provider's size limit for
	// whole-file operations.
	CodeTooLarge = "FS_TOO_LARGE"
	// CodePermission: the operating system refused access.
	CodePermission = "FS_PERMISSION_DENIED"
	// CodeOutsideRoots: the path resolves outside the provider's allowed
	// directories.
	CodeOutsideRoots = "FS_OUTSIDE_ROOTS"
	// CodeIO: any other I/O failure.
	CodeIO = "FS_IO_ERROR"
	// CodeStale: the file changed since the caller last read it.
	CodeStale = "FS_STALE_VERSION"
	// CodeNotObserved: the caller tried to change an existing file it has not
	// read.
	CodeNotObserved = "FS_NOT_OBSERVED"
	// CodeEditNotFound: an edit's old text does not occur in the file (or is
	// empty).
	CodeEditNotFound = "FS_EDIT_NOT_FOUND"
	// CodeAmbiguousEdit: an edit's old text occurs more than once and
	// ReplaceAll was not set.
	CodeAmbiguousEdit = "FS_AMBIGUOUS_EDIT"
	// CodeNoChange: an edit's old and new text are the same (after line-ending
	// normalization), so it would change nothing.
	CodeNoChange = "FS_NO_CHANGE"
	// CodeAborted: the context was done before or during the operation; for a
	// write, the file was left as it was.
	CodeAborted = "FS_ABORTED"
)

// Error is a filesystem failure the model (and programs) can act on. Message
// is complete and names the file; Code is stable.
type Error struct {
	Code string
	// Op is the operation that failed: "resolve", "stat", "read", "write",
	// "edit" or "list".
	Op string
	// Path is the display path of the file concerned ("" when there is none).
	Path    string
	Message string
	// Err is the underlying cause, if any (an *os.PathError, say).
	Err error
}

// Errorf returns an *Error with a formatted message.
func Errorf(code, op, path, format string, args ...any) *Error {
	return &Error{Code: code, Op: op, Path: path, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Harness returns the error as dsh's harness error (name "FsError").
func (e *Error) Harness() *llm.Error {
	return &llm.Error{Name: ErrorName, Code: e.Code, Message: e.Message, Cause: e.Err}
}

// As lets errors.As find an *llm.Error in a chain holding an *Error, which
// is how the tool pipeline records error.name and error.code for filesystem
// failures without importing this package.
func (e *Error) As(target any) bool {
	if p, ok := target.(**llm.Error); ok {
		*p = e.Harness()
		return true
	}
	return false
}

// CodeOf returns the code of the first *Error in err's chain, or "".
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
