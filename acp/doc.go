// Package acp is dsh's Agent Client Protocol server (`dsh acp`): an editor
// such as Zed drives dsh agents over JSON-RPC on stdin/stdout.
//
// Every ACP session is a dsh session with its own agent, so a session
// started in the editor can be listed, shown and continued with the dsh
// command, and a terminal session can be loaded in the editor. Sessions of
// one working directory share a composed app (model adapters, tools, hooks,
// permission layer) built from that directory's settings.
//
// Layout:
//
//   - conn.go: the transport. The JSON-RPC library (github.com/coder/acp-go-sdk)
//     sits behind the small peer interface; a frame filter answers what the
//     library would drop (malformed frames, batches) and a serialized writer
//     holds the only handle on the output.
//   - translate.go: the one translator from session events to session
//     updates, used live and for session/load replay, so both agree.
//   - session.go, permission.go, commands.go: sessions, prompts and cancel,
//     permission requests and modes, slash commands.
//   - clientfs.go, terminal.go: the filesystem and bash seams that use the
//     editor's fs/* and terminal/* methods when it offers them.
//
// Standard output carries protocol frames only: [ClaimStdout] moves file
// descriptor 1 to the server and points it at standard error, so stray
// writes (a library, a hook, a child process) never corrupt the stream.
package acp
