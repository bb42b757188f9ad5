package session

import "fmt"

// CodeNotSaved is the end-reason code of a turn the loop stopped because its
// session could not be saved (a full disk, a failing database): nothing more
// was sent to the model than the log had recorded. Front doors give it an
// exit status and an error of its own.
const CodeNotSaved = "not-saved"

// NotSavedError is a durability checkpoint that failed: events of the
// session are in memory but not in its store. The store keeps them and
// writes them at the next checkpoint that succeeds, so a retry once the
// cause is fixed (space freed) loses nothing this process still holds.
type NotSavedError struct {
	ID  ID
	Err error
}

func (e *NotSavedError) Error() string {
	return fmt.Sprintf("session %s could not be saved: %v", e.ID, e.Err)
}

func (e *NotSavedError) Unwrap() error { return e.Err }
