// Package local is the [bash.Executor] that runs commands as processes on
// this machine.
//
// Each command runs as `bash -c` (or /bin/sh) in a new session, so it has no
// controlling terminal and leads its own process group; every kill —
// timeout, context cancellation, Kill, KillOwner, Close — targets the whole
// group, SIGTERM first and SIGKILL after a grace period. When the shell
// exits, anything it left running in its group (`sleep 100 &`) is killed
// too, and completion waits until the group is gone and the output pipes are
// drained: a finished command leaves no process and no zombie behind, and
// Close leaves nothing running after dsh. (A process that starts its own
// session, as setsid and daemonizing programs do, leaves the group and is
// beyond these kills; containing those needs cgroups or a sandboxed
// executor.)
//
// Output is bounded in memory per stream (the tail is kept in a ring buffer)
// and spilled in full to a private file once it outgrows that, so a command
// printing 100 MB costs the same memory as one printing 100 KB and loses
// nothing. The child's environment is the parent's minus anything that
// looks like a credential, with colour and pagers turned off.
package local
