// Package jsonl is dsh's default session storage: one newline-delimited JSON
// file per session, human-readable and greppable, under a root directory
// (the app uses $DSH_HOME/sessions).
//
// Layout: <root>/<bucket>/<id>.jsonl, where the bucket is "_no-cwd" or
// "cwd-" plus the first 12 hex digits of the SHA-256 of the session's
// working directory, and the id is made a safe file name by
// [store.EncodeSegment]. Line 1 is the header
// ({"type":"session","version":0,"id":…,"createdAt":…,"cwd"?,…}); every
// following line is one event, verbatim, chunks included. Directories are
// 0700, files 0600. <root>/index.jsonl is the listing index and
// <root>/locks/ holds the per-session writer locks.
//
// Durability, and why each step is there:
//
//   - The first write publishes header and first batch together: both go to
//     a private temp file, which is synced and then hard-linked to the final
//     name. link(2), unlike rename(2), fails when the name exists, so an
//     existing log is never clobbered; the directory is synced after.
//   - Appends write a whole batch at the committed end and sync once per
//     batch (one batch per coordinator flush). If the write or the sync
//     fails (a full disk), the file is truncated back, so a retry cannot
//     duplicate seqs.
//   - Loading keeps every intact line up to the first bad one. Damage at or
//     before the last turn/end is corruption (an error naming the file line);
//     after it, it is a torn tail that repair cuts.
//
// Reading is fast because the writer has one canonical encoding: the loader
// parses exactly that shape by hand and falls back to encoding/json for any
// other valid JSON (the shared store/internal/eventjson package, whose
// FuzzParse keeps the two in agreement; SQLite rows hold the same text).
package jsonl
