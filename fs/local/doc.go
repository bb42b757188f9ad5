// Package local is the [fs.Provider] for this machine's filesystem.
//
// Behaviour worth knowing, and why:
//
//   - Resolution. A relative path is joined to the caller's cwd (the
//     session's) and cleaned lexically, so "a/../b" never depends on whether
//     "a" is a symlink; the Key is then the symlink-resolved path, walking up
//     to the nearest existing ancestor for files not created yet (their Key
//     does not change when they are). All I/O uses the Key, so writing through
//     a symlink replaces the link's target and leaves the link in place.
//     Options.Cwd is a default, not a sandbox; Options.Roots is the sandbox.
//   - Atomic replacement. Write and Edit write a temporary file in the target's
//     own directory (same filesystem, so rename is atomic), fsync it, give it
//     the final permission bits, rename it over the target and fsync the
//     directory. A crash leaves the old file or the new one, never a torn
//     file; at worst a stray ".name.*.tmp" file. The replacement gets the
//     old file's owner and group too (as root, an edit must not turn the
//     user's files into root's).
//   - What the user set up wins over atomicity. A file the process may not
//     write is refused with FS_PERMISSION_DENIED, although a rename would
//     only need the directory to be writable (root passes every access
//     check, so for root a file with no write bit at all is refused: "chmod
//     a-w" protects a file from dsh). A file with more than one hard link,
//     or whose owner and group the process cannot give the replacement (an
//     ordinary user editing another user's group-writable file), is
//     rewritten in place instead through its own inode (write, truncate to
//     the new length, fsync). That path is not atomic (a crash or a
//     concurrent reader can see a mix), but the links and the ownership
//     survive.
//   - Per-file locks. Writes and edits of one Key are serialized by an
//     in-process mutex, and the caller's [fs.Precondition] runs inside it, so
//     two agents editing the file they both read cannot both win: the second
//     sees the first one's version and is refused as stale.
//   - Faithful edits. An edit rewrites only the matched bytes. "\n" in the old
//     text matches "\r\n" in the file; the new text is written with the
//     file's dominant line ending; untouched lines keep theirs, mixed or not;
//     a UTF-8 byte-order mark is kept.
//   - Text detection. A NUL byte in the first 8 KiB makes a file binary for
//     reads (cheap for huge files); edits, which load the file anyway, refuse
//     a NUL byte anywhere and refuse invalid UTF-8, since rewriting such a
//     file as text could corrupt it. Reads replace invalid UTF-8 with U+FFFD
//     and say so.
//   - Size limits. Reads stream and need none. Whole-file operations (Edit,
//     the diff basis of Write, Write's content) are bounded by
//     Options.MaxFileSize, so one call can never pull gigabytes into memory.
package local
