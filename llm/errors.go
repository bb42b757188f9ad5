package llm

import (
	"errors"
	"fmt"
)

// Error is dsh's harness error: a message for people and the model, a stable
// code for programs, an optional HTTP status and cause. Name says which kind
// of failure it is ("LlmError", "ToolArgsError", …) and is what tool results
// record as error.name.
type Error struct {
	Name    string
	Code    string
	Message string
	Status  int
	Cause   error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Error codes used across dsh. Adapters add provider failures here so the
// loop, the UIs and headless exit codes can act on them.
const (
	CodeNoAdapter        = "NO_ADAPTER"
	CodeDuplicateAdapter = "DUPLICATE_ADAPTER"
	CodeAuth             = "AUTH"
	CodeRateLimit        = "RATE_LIMIT"
	CodeContextTooLong   = "CONTEXT_TOO_LONG"
	CodeBadRequest       = "BAD_REQUEST"
	CodeServer           = "SERVER"
	CodeStreamClosed     = "STREAM_CLOSED"
	CodeTimeout          = "TIMEOUT"
	CodeProtocol         = "PROTOCOL"
	CodeAborted          = "ABORTED"
	CodeUnknown          = "UNKNOWN"
)

// NewError returns an LlmError.
func NewError(code, format string, args ...any) *Error {
	return &Error{Name: "LlmError", Code: code, Message: fmt.Sprintf(format, args...)}
}

// HarnessError returns an error of the given name and code.
func HarnessError(name, code, msg string) *Error { return &Error{Name: name, Code: code, Message: msg} }

// AsError finds a *Error in err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// CodeOf returns the code of err's harness error, or "".
func CodeOf(err error) string {
	if e, ok := AsError(err); ok {
		return e.Code
	}
	return ""
}
