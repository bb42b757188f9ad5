package sqlite

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// rawReader is a connection to the database opened through
// modernc.org/sqlite/lib, the C library the driver wraps, for one job:
// reading a long run of events rows. It exists because the database/sql
// path costs more per row than SQLite itself: the driver opens every
// connection FULLMUTEX (a mutex round trip per step and per column), and
// copies every column into a fresh Go allocation. A rawReader opens its
// connection NOMUTEX (it is only ever used by one goroutine at a time),
// and copies each row's text straight into a few large arena blocks.
//
// It only reads: every write still goes through database/sql, so there is
// one writer, and WAL gives this connection a consistent snapshot per
// statement like any other reader.
type rawReader struct {
	tls  *libc.TLS
	db   uintptr
	stmt uintptr // the prepared range query, reset between uses
}

// rangeQuery reads events rows of one session with seq in [?2, ?3), in
// order (the primary key's order, so no sort).
const rangeQuery = "SELECT seq, event FROM events WHERE session_id = ?1 AND seq >= ?2 AND seq < ?3 ORDER BY seq"

// cptr views an address in the C heap as an unsafe.Pointer. The C heap of
// modernc.org/libc is memory the Go collector never moves or frees, so the
// conversion is sound; going through memory rather than a direct
// uintptr-to-pointer conversion states that intent to vet.
func cptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// mmapPragma maps up to 1 GiB of the database for a reader.
const mmapPragma = "PRAGMA mmap_size = 1073741824"

func openRawReader(path string) (_ *rawReader, err error) {
	tls := libc.NewTLS()
	r := &rawReader{tls: tls}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	name, err := libc.CString(path)
	if err != nil {
		return nil, err
	}
	defer libc.Xfree(tls, name)
	pp := tls.Alloc(8)
	defer tls.Free(8)
	*(*uintptr)(cptr(pp)) = 0
	rc := sqlite3.Xsqlite3_open_v2(tls, name, pp, sqlite3.SQLITE_OPEN_READWRITE|sqlite3.SQLITE_OPEN_NOMUTEX, 0)
	r.db = *(*uintptr)(cptr(pp))
	if rc != sqlite3.SQLITE_OK {
		return nil, r.errorf("opening %s", rc, path)
	}
	sqlite3.Xsqlite3_busy_timeout(tls, r.db, 10_000)
	// Memory-mapped reads: a long load touches every page of the session
	// once, and mapping them saves a pread(2) and a copy per page (about a
	// tenth of the load). The map covers the file, not this bound.
	if err := r.exec(mmapPragma); err != nil {
		return nil, err
	}
	q, err := libc.CString(rangeQuery)
	if err != nil {
		return nil, err
	}
	defer libc.Xfree(tls, q)
	*(*uintptr)(cptr(pp)) = 0
	if rc := sqlite3.Xsqlite3_prepare_v2(tls, r.db, q, -1, pp, 0); rc != sqlite3.SQLITE_OK {
		return nil, r.errorf("preparing the range query", rc)
	}
	r.stmt = *(*uintptr)(cptr(pp))
	return r, nil
}

// errorf wraps the connection's current error message.
func (r *rawReader) errorf(what string, rc int32, args ...any) error {
	msg := fmt.Sprintf("error code %d", rc)
	if r.db != 0 {
		if p := sqlite3.Xsqlite3_errmsg(r.tls, r.db); p != 0 {
			msg = libc.GoString(p)
		}
	}
	return &rawError{code: rc, msg: fmt.Sprintf(what+": %s (%d)", append(args, msg, rc)...)}
}

func (r *rawReader) close() {
	if r.stmt != 0 {
		sqlite3.Xsqlite3_finalize(r.tls, r.stmt)
		r.stmt = 0
	}
	if r.db != 0 {
		sqlite3.Xsqlite3_close_v2(r.tls, r.db)
		r.db = 0
	}
	if r.tls != nil {
		r.tls.Close()
		r.tls = nil
	}
}

// arenaBlock is the size of the blocks row texts are copied into: large
// enough that a long load makes a few dozen allocations, not one per row.
const arenaBlock = 1 << 20

// scratchBlock is the first size of the one buffer a read that keeps
// nothing reuses: most rows fit, and a larger one grows it.
const scratchBlock = 16 << 10

func blockSize(keep bool) int {
	if keep {
		return arenaBlock
	}
	return scratchBlock
}

// readRange calls fn for every events row of id with lo <= seq < hi, in
// seq order; text is nil for a value that is not text. With keep, text is a
// copy the caller may keep (nothing writes it again), in a shared arena
// block. Without it, text is valid only until fn returns: one buffer is
// reused for every row, for callers that copy what they keep anyway (a
// scan's events are cloned for fn, so an arena would copy each row twice
// and make a megabyte of garbage per megabyte read).
func (r *rawReader) readRange(ctx context.Context, id string, lo, hi int64, keep bool, fn func(seq int64, text []byte)) (err error) {
	tls, st := r.tls, r.stmt
	defer func() {
		sqlite3.Xsqlite3_reset(tls, st)
		sqlite3.Xsqlite3_clear_bindings(tls, st)
	}()
	cid, err := libc.CString(id)
	if err != nil {
		return err
	}
	defer libc.Xfree(tls, cid)
	if rc := sqlite3.Xsqlite3_bind_text(tls, st, 1, cid, int32(len(id)), 0); rc != sqlite3.SQLITE_OK {
		return r.errorf("binding the session id", rc)
	}
	if rc := sqlite3.Xsqlite3_bind_int64(tls, st, 2, lo); rc != sqlite3.SQLITE_OK {
		return r.errorf("binding the range", rc)
	}
	if rc := sqlite3.Xsqlite3_bind_int64(tls, st, 3, hi); rc != sqlite3.SQLITE_OK {
		return r.errorf("binding the range", rc)
	}
	var block []byte
	for n := 0; ; n++ {
		if n&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		switch rc := sqlite3.Xsqlite3_step(tls, st); rc {
		case sqlite3.SQLITE_ROW:
		case sqlite3.SQLITE_DONE:
			return nil
		default:
			return r.errorf("reading events", rc)
		}
		seq := sqlite3.Xsqlite3_column_int64(tls, st, 0)
		if sqlite3.Xsqlite3_column_type(tls, st, 1) != sqlite3.SQLITE_TEXT {
			fn(seq, nil)
			continue
		}
		p := sqlite3.Xsqlite3_column_text(tls, st, 1)
		size := int(sqlite3.Xsqlite3_column_bytes(tls, st, 1))
		if p == 0 && size > 0 {
			return errors.New("reading events: out of memory")
		}
		if !keep {
			block = block[:0]
		}
		if cap(block)-len(block) < size {
			block = make([]byte, 0, max(blockSize(keep), size))
		}
		start := len(block)
		block = append(block, unsafe.Slice((*byte)(cptr(p)), size)...)
		fn(seq, block[start:len(block):len(block)])
	}
}

func (r *rawReader) exec(sql string) error {
	q, err := libc.CString(sql)
	if err != nil {
		return err
	}
	defer libc.Xfree(r.tls, q)
	if rc := sqlite3.Xsqlite3_exec(r.tls, r.db, q, 0, 0, 0); rc != sqlite3.SQLITE_OK {
		return r.errorf("%s", rc, sql)
	}
	return nil
}
