package fstool

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/dshq/dsh/fs"
	"github.com/dshq/dsh/fs/local"
	"github.com/dshq/dsh/fs/policy"
	"github.com/dshq/dsh/tool"
)

// jsonCall is a call of tl with args for host.
func jsonCall(t *testing.T, tl tool.Tool, host tool.Host, args any) tool.Call {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tool.Call{ID: "call-1", Name: tl.Info().Name, Args: b, Raw: string(b), Host: host}
}

// Write and edit know before they run whether the read-before-write
// policy lets them through, so nobody is asked to approve a change that
// would fail.
func TestPrecheck(t *testing.T) {
	f := newFixture(t, true)
	ctx := context.Background()
	writeFile(t, f.path("a.txt"), "one\n")
	pre := func(tl tool.Tool, args map[string]any) error {
		return tl.(tool.Prechecker).Precheck(ctx, jsonCall(t, tl, f.host, args))
	}
	wantFsCode(t, pre(f.edit, map[string]any{"file_path": "a.txt", "old_string": "one", "new_string": "two"}), fs.CodeNotObserved)
	wantFsCode(t, pre(f.write, map[string]any{"file_path": "a.txt", "content": "x"}), fs.CodeNotObserved)
	wantFsCode(t, pre(f.edit, map[string]any{"file_path": "missing.txt", "old_string": "a", "new_string": "b"}), fs.CodeNotFound)
	if err := pre(f.write, map[string]any{"file_path": "new.txt", "content": "x"}); err != nil {
		t.Errorf("a new file: %v", err)
	}
	f.ok(t, f.read, map[string]any{"file_path": "a.txt"})
	if err := pre(f.edit, map[string]any{"file_path": "a.txt", "old_string": "one", "new_string": "two"}); err != nil {
		t.Errorf("after a read: %v", err)
	}
	writeFile(t, f.path("a.txt"), "changed behind its back\n")
	wantFsCode(t, pre(f.edit, map[string]any{"file_path": "a.txt", "old_string": "one", "new_string": "two"}), fs.CodeStale)
	if _, err := os.Stat(f.path("new.txt")); !os.IsNotExist(err) {
		t.Error("a precheck wrote something")
	}
}

// The tools ask Confirm about the file they opened, with its identity,
// and a refusal keeps the content from the model and the file unchanged.
func TestConfirm(t *testing.T) {
	dir := t.TempDir()
	p, err := local.New(local.Options{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir+"/secret.txt", "the secret\n")
	var seen []string
	refuse := false
	confirm := func(_ context.Context, call tool.Call, key string, id fs.FileID) error {
		seen = append(seen, call.Name+" "+key)
		if call.Name == "read" && id.Inode == 0 {
			return errors.New("no identity")
		}
		if refuse {
			return errors.New("permission: another name of this file is denied")
		}
		return nil
	}
	ts := Tools(p, policy.New(), Options{Confirm: confirm})
	read, write := ts[0], ts[1]
	host := newHost("a", dir)
	ctx := context.Background()
	res, err := read.Run(ctx, jsonCall(t, read, host, map[string]any{"file_path": "secret.txt"}))
	if err != nil || !strings.Contains(res.Content[0].Text, "the secret") {
		t.Fatalf("confirmed read: %v %+v", err, res)
	}
	refuse = true
	res, err = read.Run(ctx, jsonCall(t, read, host, map[string]any{"file_path": "secret.txt"}))
	if err == nil || len(res.Content) > 0 && strings.Contains(res.Content[0].Text, "the secret") {
		t.Fatalf("refused read returned %+v, %v", res, err)
	}
	if _, err := write.Run(ctx, jsonCall(t, write, host, map[string]any{"file_path": "secret.txt", "content": "pwned"})); err == nil {
		t.Fatal("refused write ran")
	}
	if fileContent(t, dir+"/secret.txt") != "the secret\n" {
		t.Fatal("a refused write changed the file")
	}
	if len(seen) != 3 || !strings.HasSuffix(seen[2], "/secret.txt") {
		t.Fatalf("confirm saw %q", seen)
	}
}
