// Package todo provides the todo_write tool: the model keeps a structured
// task list that front-ends show as a plan or checklist.
//
// There is no service behind it. Each call appends a durable "todo/write"
// session event carrying the whole list, so the current list is simply the
// last such event in the log: it survives restarts and replays with the
// session, and a resumed or forked agent sees the list as it was. The event
// never becomes model history; the model knows its list from its own calls.
package todo
