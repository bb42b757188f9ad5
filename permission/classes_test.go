package permission

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/tool"
)

// The classes of shell-analysis bypass of issue 19, each with many
// spellings (every bypass spelling was checked against real bash), next
// to ordinary commands of the same programs that must keep running where
// rules allow them. Each case names its mode and rules; Ask and Deny both
// keep the command from running without the user.

// classCase is one command line and the verdict it must get.
type classCase struct {
	line  string
	mode  Mode
	rules rs
	want  Behavior
}

// rs are a case's rules: allowed, denied and asked-about.
type rs struct{ allow, deny, ask []string }

// classEnv is a project with the directories the cases name: secrets
// (Read denied), protected (Edit denied), src, sub; and a directory
// outside it holding the marker P no case may create.
func classEnv(t *testing.T) (env, string) {
	e := newEnv(t)
	for _, d := range []string{"secrets", "protected", ".git/hooks"} {
		if err := os.MkdirAll(filepath.Join(e.root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"secrets/key.txt", "src/main.go", ".git/config", "list", "in.txt", "a.txt", "b.txt"} {
		if err := os.WriteFile(filepath.Join(e.root, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return e, filepath.Join(e.outside, "P")
}

func runClass(t *testing.T, e env, cases []classCase) {
	t.Helper()
	ctx := context.Background()
	checkers := map[string]*Checker{}
	for _, tt := range cases {
		var r []Rule
		r = append(r, rules(Allow, userSettings, tt.rules.allow...)...)
		r = append(r, rules(Deny, "/p/.dsh/settings.json", tt.rules.deny...)...)
		r = append(r, rules(Ask, userSettings, tt.rules.ask...)...)
		key := string(tt.mode) + "|" + strings.Join(tt.rules.allow, ",") + "|" + strings.Join(tt.rules.deny, ",") + "|" + strings.Join(tt.rules.ask, ",")
		c := checkers[key]
		if c == nil {
			c = mustNew(t, Config{Mode: tt.mode, ModeSource: settings.LayerCLI, Rules: r, Home: e.home, Cwd: e.root})
			checkers[key] = c
		}
		d := c.Decide(ctx, bashCall(tt.line), e.root)
		if d.Behavior != tt.want {
			t.Errorf("%q in %s with %+v: got %s, want %s\nreason: %s", tt.line, tt.mode, tt.rules, d.Behavior, tt.want, d.Reason)
		}
	}
}

// Class 1: expansions that evaluate text. ${x@P} expands a value as a
// prompt string, which runs the command substitutions in it, whatever the
// expansion's form or the command it is an argument of.
func TestClassPromptExpansion(t *testing.T) {
	e, p := classEnv(t)
	x := `X='$(touch ` + p + `)'; `
	none, denyTouch := rs{}, rs{deny: []string{"Bash(touch:*)"}}
	gitStatus := rs{allow: []string{"Bash(git status:*)"}}
	var cases []classCase
	for _, line := range []string{
		x + `echo "${X@P}"`,
		x + `echo ${X@P}`,
		`set -- '$(touch ` + p + `)'; echo "${1@P}"`,
		`set -- '$(touch ` + p + `)'; echo "${@@P}"`,
		`set -- '$(touch ` + p + `)'; echo "${*@P}"`,
		`a=('$(touch ` + p + `)'); echo "${a[0]@P}"`,
		`a=('$(touch ` + p + `)'); echo "${a[@]@P}"`,
		x + `echo "${Y:-${X@P}}"`,
		x + `echo "${Y:=${X@P}}"`,
		x + `echo "${X:+${X@P}}"`,
		x + `r=X; echo "${!r@P}"`,
		x + `read -r y <<< "${X@P}"`,
		x + `read -rp "${X@P}" y < /dev/null`,
		x + `printf '%s\n' "${X@P}"`,
		x + `printf -v y '%s' "${X@P}"`,
		x + `test -n "${X@P}"`,
		x + `[ -n "${X@P}" ]`,
		x + `[[ -n ${X@P} ]]`,
		x + `: "${X@P}"`,
		x + `y=${X@P}`,
		x + `export Y="${X@P}"`,
		x + `declare y="${X@P}"`,
		x + `f() { local y=${X@P}; }; f`,
		x + "cat <<EOF\n${X@P}\nEOF",
		x + `case ${X@P} in *) ;; esac`,
		x + `for i in ${X@P}; do :; done`,
		x + `echo "prefix ${X@P} suffix"`,
		x + `echo "$(echo "${X@P}")"`,
		x + `true && echo "${X@P}" || false`,
		// Arithmetic contexts evaluate a variable's value as an expression,
		// and a subscript in it runs command substitutions.
		`x='a[$(touch ` + p + `)]'; echo $((x))`,
		`x='a[$(touch ` + p + `)]'; echo $[x]`,
		`x='a[$(touch ` + p + `)]'; echo "${a[x]}"`,
		`x='a[$(touch ` + p + `)]'; echo "${s:x}"`,
		`x='a[$(touch ` + p + `)]'; echo "${s:0:x}"`,
		`x='a[$(touch ` + p + `)]'; (( x ))`,
		`x='a[$(touch ` + p + `)]'; let y=x`,
		`x='a[$(touch ` + p + `)]'; [[ x -eq 1 ]]`,
		`x='a[$(touch ` + p + `)]'; declare -i y; y=x`,
		`x='a[$(touch ` + p + `)]'; a[x]=1`,
		`x='a[$(touch ` + p + `)]'; echo ${!x}`,
		`declare -n r='a[$(touch ` + p + `)]'; echo "$r"`,
		`local -n r 2>/dev/null; r=1`,
		// Builtins that run or expand text.
		`compgen -W '$(touch ` + p + `)' x`,
		`compgen -W "$W" x`,
		`hash -p /tmp/evil ls; ls`,
		`enable -f /tmp/evil.so evil`,
		`fc -e : -1`,
	} {
		cases = append(cases, classCase{line, ModeDefault, none, Ask}, classCase{line, ModePlan, none, Deny},
			classCase{line, ModeBypass, denyTouch, Ask})
	}
	cases = append(cases,
		classCase{x + `git status "${X@P}"`, ModeDefault, gitStatus, Ask},
		classCase{x + `echo hi > "${X@P}"`, ModeAcceptEdits, none, Ask},
		classCase{`compgen -C 'touch ` + p + `' x`, ModeBypass, denyTouch, Deny},
		classCase{`complete -C 'touch ` + p + `' ls`, ModeBypass, denyTouch, Deny},
		// Transformations that only quote or change case evaluate nothing.
		classCase{x + `echo "${X@Q}" "${X@E}" "${X@A}" "${X@K}" "${X@a}" "${X@U}" "${X@u}" "${X@L}"`, ModeDefault, none, Allow},
		classCase{`echo "${HOME}" "${#HOME}" "${HOME:-x}" "${HOME/a/b}"`, ModeDefault, none, Allow},
		classCase{`compgen -W 'a b c' a`, ModeDefault, none, Allow},
		classCase{`git status "$X"`, ModeDefault, gitStatus, Allow}, // git status has no option that runs or writes anything
		classCase{`git status --short`, ModeDefault, gitStatus, Allow},
	)
	runClass(t, e, cases)
}

// Class 2: input redirections and $(< file) read files: the read tool's
// boundary and rules apply. /dev/tcp and /dev/udp are network access.
func TestClassRedirectionReads(t *testing.T) {
	e, _ := classEnv(t)
	none := rs{}
	sshDeny := rs{deny: []string{"Read(~/.ssh/**)"}}
	var cases []classCase
	for _, line := range []string{
		`echo "$(< ` + e.outside + `/secret)"`,
		`echo $(<` + e.outside + `/secret)`,
		`echo "$(<~/.ssh/id_rsa)"`,
		`read -r l < ~/.ssh/id_rsa; echo "$l"`,
		`read -r l < /proc/$PPID/environ`,
		`read -r l < /proc/self/environ; echo "$l"`,
		`read -r l </etc/shadow`,
		`mapfile -t a < /etc/passwd; echo "${a[0]}"`,
		`while read -r l; do echo "$l"; done < ../outside.txt`,
		`exec 3< /etc/passwd; read -u 3 l; echo "$l"`,
		`echo "$(cat <<< "$(< /etc/hostname)")"`,
		`printf %s "$(<"$F")"`,
		`: < /etc/passwd`,
		`x=$(< /etc/passwd); echo "$x"`,
		`read l 0< /etc/passwd`,
		`read l <> /etc/passwd`,
		`echo "$(< src/../../elsewhere/secret)"`,
		// Network connections bash opens itself.
		`exec 3<>/dev/tcp/127.0.0.1/80`,
		`echo x > /dev/tcp/example.com/80`,
		`read l < /dev/udp/1.2.3.4/53`,
		`: </dev/tcp/localhost/22`,
		`echo x >& /dev/tcp/127.0.0.1/9`,
	} {
		cases = append(cases, classCase{line, ModeDefault, none, Ask}, classCase{line, ModeAcceptEdits, none, Ask})
	}
	for _, line := range []string{
		`read -r l < ~/.ssh/id_rsa`,
		`read -r l < $HOME/.ssh/id_rsa`,
		`read -r l < "${HOME}/.ssh/id_rsa"`,
		`echo "$(<~/.ssh/id_rsa)"`,
		`echo "$(< ` + e.home + `/.ssh/id_rsa)"`,
		`mapfile a < ~/.ssh/config`,
	} {
		cases = append(cases, classCase{line, ModeBypass, sshDeny, Deny}, classCase{line, ModeDefault, sshDeny, Deny})
	}
	cases = append(cases,
		classCase{`read -r l < "$F"`, ModeBypass, sshDeny, Ask},
		classCase{`exec 3<>/dev/tcp/127.0.0.1/80`, ModeBypass, rs{deny: []string{"WebFetch(domain:example.com)"}}, Ask},
		// Reads inside the workspace, and bypass mode without rules.
		classCase{`read -r l < src/main.go; echo "$l"`, ModeDefault, none, Allow},
		classCase{`echo "$(< src/main.go)"`, ModeDefault, none, Allow},
		classCase{`while read -r l; do echo "$l"; done < list`, ModeDefault, none, Allow},
		classCase{`read -r -n 8 x < /dev/urandom`, ModeDefault, none, Allow},
		classCase{`echo "$(< /etc/hostname)"`, ModeBypass, none, Allow},
		classCase{`exec 3<>/dev/tcp/127.0.0.1/80`, ModeBypass, none, Allow},
		classCase{`cat < src/main.go`, ModeDefault, rs{allow: []string{"Bash(cat:*)"}}, Allow},
	)
	runClass(t, e, cases)
}

// Class 3: after cd, pushd or a subshell's cd, a relative path may be
// relative to any directory the line may be in: deny rules hold for every
// one, in every mode.
func TestClassDirectoryChange(t *testing.T) {
	e, _ := classEnv(t)
	secrets := rs{deny: []string{"Read(./secrets/**)"}, allow: []string{"Bash(cat:*)", "Bash(grep:*)", "Bash(head:*)"}}
	protected := rs{deny: []string{"Edit(./protected/**)"}, allow: []string{"Bash(tee:*)", "Bash(cp:*)", "Bash(touch:*)"}}
	var cases []classCase
	for _, line := range []string{
		`cd secrets && read -r l < key.txt; echo "$l"`,
		`cd secrets; read -r l < key.txt`,
		`cd ./secrets && read l < ./key.txt`,
		`cd secrets/ && echo "$(< key.txt)"`,
		`(cd secrets && read l < key.txt; echo "$l")`,
		`(cd secrets; cat key.txt)`,
		`pushd secrets >/dev/null && read l < key.txt`,
		`cd sub/../secrets && read l < key.txt`,
		`cd "secrets" && read l < key.txt`,
		`cd -- secrets && read l < key.txt`,
		`cd -P secrets && read l < key.txt`,
		`cd secrets && cat key.txt`,
		`cd secrets && head -n1 key.txt`,
		`cd secrets && grep -r . .`,
		`cd ` + e.root + `/secrets && cat key.txt`,
		`cd src && cd ../secrets && cat key.txt`,
		`cat secrets/key.txt`,
		`grep x secrets/key.txt`,
		`mv secrets/key.txt x`,
		`cat $HOME/../` + filepath.Base(e.home) + `/../proj/secrets/key.txt`,
	} {
		cases = append(cases, classCase{line, ModeDefault, secrets, Deny}, classCase{line, ModeBypass, secrets, Deny})
	}
	for _, line := range []string{
		// A path the line only knows at run time, and whole trees, may hold
		// the denied files.
		`cat secrets/*`, `cat sec*/key.txt`, `cat "$(echo secrets)/key.txt"`, `f=secrets/key.txt; cat $f`,
		`for f in secrets/*; do cat $f; done`, `echo secrets/key.txt | xargs cat`, `find . -name key.txt -exec cat {} +`,
		`grep -r x .`, `grep -rn x`, `grep -R x`, `tar cf /tmp/x.tar .`, `cp -r . /tmp/x`, `python3 -c 'print(open("secrets/key.txt").read())'`,
	} {
		cases = append(cases, classCase{line, ModeBypass, secrets, Ask})
	}
	for _, line := range []string{
		`git checkout .`, `git reset --hard`, `git clean -fdx`, `rm -rf .`, `rm -rf *`, `chmod -R 777 .`, `find . -delete`,
		`d=protected; echo x > $d/f`, `echo x > prot*/f`, `sed -i s/a/b/ protected/*`,
	} {
		cases = append(cases, classCase{line, ModeBypass, protected, Ask})
	}
	cases = append(cases, classCase{`git checkout -- protected`, ModeBypass, protected, Deny},
		classCase{`find src -exec cat {} +`, ModeBypass, secrets, Allow}, classCase{`grep -r x src`, ModeDefault, secrets, Allow})
	for _, line := range []string{
		`cd $D && read l < key.txt`,
		`cd "$(echo secrets)" && read l < key.txt`,
		`cd - && read l < key.txt`,
		`for d in secrets; do cd $d; read l < key.txt; done`,
		`f() { cd secrets; }; f; read l < key.txt`,
		`cd ~+ && read l < key.txt`,
	} {
		cases = append(cases, classCase{line, ModeBypass, secrets, Ask}, classCase{line, ModeDefault, secrets, Ask})
	}
	for _, line := range []string{
		`cd protected && echo x > f`,
		`cd protected; echo x >> f`,
		`pushd protected >/dev/null; echo x > f`,
		`(cd protected && echo x > f)`,
		`cd protected && tee f <<< x`,
		`cd protected && cp ../a.txt f`,
		`cd protected && touch f`,
		`env -C protected sh -c 'echo x > f'`,
		`cd sub && cd ../protected && echo x > f`,
		`echo x > protected/f`,
	} {
		cases = append(cases, classCase{line, ModeBypass, protected, Deny}, classCase{line, ModeAcceptEdits, protected, Deny})
	}
	for _, line := range []string{
		`cd "$(echo protected)" && echo x > f`,
		`cd $D; echo x > f`,
		`while true; do cd protected; break; done; echo x > f`,
	} {
		cases = append(cases, classCase{line, ModeBypass, protected, Ask}, classCase{line, ModeAcceptEdits, protected, Ask})
	}
	cases = append(cases,
		// The same programs elsewhere run as the rules say.
		classCase{`cd src && cat main.go`, ModeDefault, secrets, Allow},
		classCase{`cd src && read l < main.go`, ModeDefault, secrets, Allow},
		classCase{`cd sub && echo x > out.txt`, ModeAcceptEdits, protected, Allow},
		classCase{`cd src && tee out.txt <<< x`, ModeDefault, protected, Allow},
		classCase{`cd sub && echo x > f`, ModeBypass, protected, Allow},
		classCase{`grep -rn x src`, ModeDefault, secrets, Allow},
		// A directory outside the workspace is beyond a prefix rule.
		classCase{`cd .. && cat x`, ModeDefault, secrets, Ask},
		classCase{`cd /etc && cat passwd`, ModeDefault, secrets, Ask},
	)
	runClass(t, e, cases)
}

// Class 4: brace expansion happens before quote removal, so quoted parts
// do not stop it from building the command name.
func TestClassQuotedBraceExpansion(t *testing.T) {
	e, _ := classEnv(t)
	denyRm := rs{deny: []string{"Bash(rm:*)"}}
	var cases []classCase
	for _, line := range []string{
		`{"rm",-f,x}`,
		`{'rm',-f,x}`,
		`{$'rm',-f,x}`,
		`{"r"m,-f,x}`,
		`{r"m",-f,x}`,
		`{"rm","-f","x"}`,
		`{"rm",}`,
		`{rm,}`,
		`{\rm,-f,x}`,
		`{"rm",-f,"$x"}`,
		`{"/bin/rm",-f,x}`,
		`{"rm",-rf,x} && echo done`,
		`echo ok; {"rm",-f,x}`,
		`$(echo) {"rm",-f,x}`,
		`sudo {"rm",-f,x}`,
		`timeout 5 {"rm",-f,x}`,
	} {
		cases = append(cases, classCase{line, ModeBypass, denyRm, Ask}, classCase{line, ModeDefault, denyRm, Ask})
	}
	cases = append(cases,
		classCase{`echo {"a",b}`, ModeBypass, denyRm, Allow},
		classCase{`echo {"a",b} "{rm,-f}"`, ModeDefault, denyRm, Allow},
		classCase{`touch {"a",b}.txt`, ModeBypass, denyRm, Allow},
	)
	runClass(t, e, cases)
}

// Class 5: wrappers and programs that run a command given in their
// arguments or options. Unwrapped, the command inside is what rules see;
// a program the analysis does not know that names a denied program among
// its arguments asks.
func TestClassWrappers(t *testing.T) {
	e, p := classEnv(t)
	touch := "touch " + p
	denyTouch := rs{deny: []string{"Bash(touch:*)"}}
	var cases []classCase
	for _, line := range []string{
		`flock /tmp/l ` + touch, `flock -n /tmp/l ` + touch, `flock -w 5 /tmp/l ` + touch, `flock /tmp/l -c '` + touch + `'`,
		`flock --timeout 5 /tmp/l --command '` + touch + `'`,
		`setpriv --reuid=0 ` + touch, `setpriv --no-new-privs ` + touch, `setpriv --inh-caps -all ` + touch,
		`prlimit --nofile=100 ` + touch, `prlimit -n100 ` + touch, `prlimit --cpu=10 --as=1000000 ` + touch,
		`taskset 1 ` + touch, `taskset -c 0 ` + touch, `taskset 0x3 ` + touch,
		`unshare ` + touch, `unshare -r ` + touch, `unshare --map-root-user ` + touch, `unshare -U -r -m ` + touch, `unshare --wd=/ ` + touch,
		`chrt -f 1 ` + touch, `chrt -o 0 ` + touch, `chrt --rr 1 ` + touch,
		`script -qc '` + touch + `' /dev/null`, `script -c '` + touch + `'`, `script --command='` + touch + `' /dev/null`,
		`script -q -c "` + touch + `" /dev/null`, `script -e -q -c '` + touch + `' /dev/null`,
		`su -c '` + touch + `'`, `su root -c '` + touch + `'`, `su - root -c '` + touch + `'`, `su -s /bin/bash -c '` + touch + `' root`,
		`su --command='` + touch + `' root`, `su -l root --session-command '` + touch + `'`,
		`runuser -u root ` + touch, `runuser -u root -- ` + touch, `runuser -l root -c '` + touch + `'`,
		`sg root '` + touch + `'`, `sg root -c '` + touch + `'`, `sg - root -c '` + touch + `'`,
		`chroot / ` + touch, `chroot --userspec=0:0 / ` + touch,
		`strace -f -o /dev/null ` + touch, `strace -e trace=none ` + touch, `strace -qq ` + touch, `ltrace ` + touch, `ltrace -o /dev/null ` + touch,
		`watch -n1 ` + touch, `watch -n 1 '` + touch + `'`, `watch -x ` + touch, `watch -e -n 1 ` + touch, `watch -g ` + touch,
		`ionice -c3 ` + touch, `ionice -c 2 -n 7 ` + touch, `stdbuf -oL ` + touch, `stdbuf -i0 -o0 ` + touch,
		`nice ` + touch, `nice -n 5 ` + touch, `nice --adjustment=5 ` + touch, `nice -5 ` + touch,
		`timeout 5 ` + touch, `timeout --preserve-status 5 ` + touch, `timeout -k 1 5 ` + touch, `timeout --signal=KILL 5 ` + touch,
		`doas ` + touch, `doas -u root ` + touch, `catchsegv ` + touch, `nohup ` + touch, `setsid ` + touch,
		`command ` + touch, `exec ` + touch, `sudo -u root ` + touch, `env -i ` + touch, `xargs -a list touch`,
		`nsenter -t 1 -m ` + touch, `pkexec ` + touch, `fakeroot ` + touch, `valgrind --tool=none ` + touch,
		`ssh-agent ` + touch, `entr ` + touch + ` < list`, `entr -s '` + touch + `' < list`, `firejail --quiet ` + touch,
		`timeout 5 nice -n 1 stdbuf -oL ` + touch,
		// Programs that take a command in an option.
		`ssh -o ProxyCommand='` + touch + `' host`, `ssh -oProxyCommand='` + touch + `' host`, `ssh -o 'ProxyCommand ` + touch + `' host`,
		`ssh -o proxycommand="` + touch + `" host`, `ssh -o LocalCommand='` + touch + `' -o PermitLocalCommand=yes host`,
		`ssh -o KnownHostsCommand='` + touch + `' host`, `scp -o ProxyCommand='` + touch + `' a.txt host:b`,
		`sftp -o ProxyCommand='` + touch + `' host`, `scp -S '` + touch + `' a.txt host:b`,
		`git -c core.sshCommand='` + touch + `' fetch`, `git -c core.pager='` + touch + `' log`, `git -c core.fsmonitor='` + touch + `' status`,
		`git -c diff.external='` + touch + `' diff`, `git -c core.editor='` + touch + `' commit`, `git -c pager.log='` + touch + `' log`,
		`git -c credential.helper='!` + touch + `' fetch`, `git -C . -c core.sshCommand='` + touch + `' push`,
		`git clone -u '` + touch + `' host:x`, `git fetch --upload-pack='` + touch + `' origin`, `git rebase -x '` + touch + `' HEAD~1`,
		`git rebase --exec='` + touch + `' HEAD~1`, `git bisect run ` + touch, `git submodule foreach '` + touch + `'`,
		`git config core.fsmonitor '` + touch + `'`,
		`rsync -e '` + touch + `' a.txt host:b`, `rsync --rsh='` + touch + `' a.txt host:b`, `rsync -e"` + touch + `" a.txt host:b`,
		`tar --to-command='` + touch + `' -xf a.tar`, `tar -I '` + touch + `' -cf x.tar .`, `tar --use-compress-program='` + touch + `' -xf a.tar`,
		`tar --checkpoint=1 --checkpoint-action=exec='` + touch + `' -cf x.tar .`, `tar -F '` + touch + `' -cf x.tar .`,
		`tar --info-script='` + touch + `' -cf x.tar .`, `tar xf a.tar --to-command='` + touch + `'`, `tar -cf x.tar --use-comp='` + touch + `' .`,
		`find . -exec ` + touch + ` \;`, `find . -ok ` + touch + ` \;`, `find . -execdir ` + touch + ` {} +`, `find . -okdir ` + touch + ` \;`,
		`find / -maxdepth 0 -exec ` + touch + ` \;`,
		`sed -n '1e ` + touch + `' list`, `sed '1e ` + touch + `' list`, `awk 'BEGIN{system("` + touch + `")}'`,
		`zip -T -TT '` + touch + `' x.zip a.txt`, `sort --compress-program='` + touch + `' list`, `rg --pre '` + touch + `' x`,
		`go test -exec '` + touch + `' ./...`, `go vet -vettool='` + touch + `' ./...`, `nohup -- ` + touch, `tar cIf '` + touch + `' /dev/null .`,
		`timeout -- 5 ` + touch, `unshare -fp ` + touch, `script /dev/null -qc '` + touch + `'`, `su -l -c '` + touch + `' root`,
		`git -c Core.FSMonitor='` + touch + `' status`, `chroot / /usr/bin/touch ` + p, `watch 'touch ` + p + `; true'`,
		`npm test --script-shell='` + touch + `'`, `npx -c '` + touch + `'`,
	} {
		cases = append(cases, classCase{line, ModeBypass, denyTouch, Deny})
	}
	for _, line := range []string{
		// Not unwrapped, but a denied program among the arguments of an
		// unknown program, or in a command line it is given, asks.
		`parallel touch ::: ` + p, `parallel '` + touch + `' ::: x`, `mywrapper ` + touch, `mywrapper --run=touch ` + p,
		`mywrapper --cmd '` + touch + `'`, `tmux new-session -d '` + touch + `'`, `xvfb-run -a ` + touch,
		`numactl --cpunodebind=0 ` + touch, `perf stat -e cycles ` + touch, `systemd-run --user ` + touch, `dbus-launch ` + touch,
		`vim -c '!` + touch + `'`, `docker run img ` + touch,
		// Code in another language can run anything; deny rules cannot see
		// inside it.
		`python3 -c 'import os; os.system("` + touch + `")'`, `perl -e 'system("` + touch + `")'`, `node -e 'require("child_process").execSync("` + touch + `")'`,
		`ruby -e 'system("touch", "` + p + `")'`, `php -r 'system("` + touch + `");'`, `sed 's/.*/` + strings.ReplaceAll(touch, "/", `\/`) + `/e' list`,
		`awk '{ print | "sh" }' list`, `make --eval='$(shell ` + touch + `)'`, `make -E '$(shell ` + touch + `)' -f /dev/null`,
		`git -c core.hooksPath=/tmp/h commit -m x`, `ssh -F ./cfg host`, `gdb -batch -ex 'shell ` + touch + `'`,
		`make SHELL=/tmp/evil`, `cargo --config 'build.rustc-wrapper="/tmp/x"' build`,
	} {
		cases = append(cases, classCase{line, ModeBypass, denyTouch, Ask})
	}
	ls := rs{allow: []string{"Bash(ls:*)", "Bash(grep:*)", "Bash(find:*)"}, deny: []string{"Bash(touch:*)"}}
	for _, line := range []string{
		// Ordinary wrapped commands still run where their rules allow them.
		`timeout 5 ls`, `nice -n 5 ls -la`, `flock /tmp/l ls`, `taskset -c 0 ls`, `chrt -o 0 ls`, `prlimit --nofile=64 ls`,
		`stdbuf -oL ls`, `ionice -c3 ls`, `strace -o /dev/null ls`, `watch -x ls`, `watch -n 1 ls`, `script -qc 'ls' /dev/null`,
		`find . -exec grep -l x {} +`, `xargs -a list echo`, `timeout 5 nice ls`, `nohup ls`, `entr ls < list`,
	} {
		cases = append(cases, classCase{line, ModeDefault, ls, Allow})
	}
	cases = append(cases,
		classCase{`su -c 'ls'`, ModeDefault, ls, Ask},           // the privileged wrapper itself needs a rule
		classCase{`setpriv --reuid=0 ls`, ModeDefault, ls, Ask}, // so does this one
		classCase{`unshare -r ls`, ModeDefault, ls, Ask},
		classCase{`mywrapper ls`, ModeBypass, denyTouch, Allow},     // an unknown program naming no denied one
		classCase{`python3 -c 'print(1)'`, ModeBypass, rs{}, Allow}, // no deny rule to evade
		classCase{`python3 script.py`, ModeBypass, denyTouch, Allow},
	)
	runClass(t, e, cases)
}

// Class 6: plan mode's read-only programs, with the options and operands
// that make them write or run programs.
func TestClassPlanReadOnly(t *testing.T) {
	e, p := classEnv(t)
	all := rs{allow: []string{"Bash(go:*)", "Bash(man:*)", "Bash(git:*)", "Bash(uniq:*)", "Bash(xxd:*)", "Bash(file:*)", "Bash(tree:*)",
		"Bash(sort:*)", "Bash(date:*)", "Bash(hostname:*)", "Bash(find:*)", "Bash(rg:*)", "Bash(sed:*)", "Bash(env:*)", "Bash(ls:*)", "Bash(cat:*)"}}
	var cases []classCase
	for _, line := range []string{
		`go list -toolexec /tmp/x ./...`, `go list -toolexec=/tmp/x ./...`, `go list --toolexec /tmp/x ./...`, `go list -json -toolexec 'touch ` + p + `' ./...`,
		`go list -exec /tmp/x ./...`, `go list -mod=mod ./...`, `go list -modfile=x.mod ./...`, `go list -o x ./...`,
		`man -C ./man.conf ls`, `man --config-file=./man.conf ls`, `man -Cman.conf ls`, `man --config-f ./man.conf ls`, `man -P cat ls`, `man -H ls`,
		`go env --w GOFLAGS=-x`, `go env -w GOFLAGS=-x`, `go env --u GOFLAGS`, `go env -w=true GOFLAGS=-x`, `go env -json -w GOFLAGS=-x`,
		`git remote -v add x /tmp/r`, `git remote --verbose add x y`, `git remote -v rename a b`, `git remote -v set-url x y`,
		`git remote -v remove x`, `git remote -v prune origin`, `git remote -v update`, `git remote add x y`,
		`uniq in.txt out.txt`, `uniq -c in.txt out.txt`, `uniq -- in.txt out.txt`, `uniq -f 1 in.txt out.txt`, `uniq -ci in.txt out.txt`,
		`xxd in.txt out.txt`, `xxd -- in.txt out.txt`, `xxd -c 16 in.txt out.txt`, `xxd -a in.txt out.txt`, `xxd -ps in.txt out.txt`, `xxd -r in.txt`,
		`file -C -m M`, `file --compile -m M`, `file -Cm M`, `file -C`, `file --comp -m M`,
		`tree -o out.txt`, `tree -R -H . .`, `tree -ao out.txt`,
		`sort -o f in.txt`, `sort --output=f in.txt`, `sort --out f in.txt`,
		`date -s 2020-01-01`, `date --set=2020-01-01`, `hostname newname`,
		`find . -fprint out`, `find . -delete`, `find . -name x -exec rm {} +`,
		`rg --pre 'touch ` + p + `' x`, `sed -i s/a/b/ in.txt`, `sed -n 'w out' in.txt`, `sed -n '1e touch ` + p + `' in.txt`,
		`git branch -D main`, `git tag -d v1`, `git tag -l -d v1`, `git log --output=f`, `git diff --output=f`, `git help -w log`,
		`git grep -O'touch ` + p + `' x`, `git show --ext-diff`, `git log -p --ext-diff`, `git config core.x y`, `git stash`,
		`env touch ` + p, `env -i touch ` + p,
	} {
		cases = append(cases, classCase{line, ModePlan, all, Deny})
	}
	for _, line := range []string{
		`go list ./...`, `go list -json -deps ./...`, `go env GOPATH`, `go env -json`, `go version`, `go doc fmt`,
		`man ls`, `man -k printf`, `man 3 printf`,
		`git remote -v`, `git remote`, `git remote show origin`, `git remote get-url origin`, `git log --oneline`, `git diff HEAD~1`,
		`git tag -l`, `git tag`, `git branch -a`, `git status`, `git config --get user.name`, `git grep -n -e -O x`,
		`uniq in.txt`, `uniq -c in.txt`, `uniq -d -- in.txt`, `xxd in.txt`, `xxd -c 16 in.txt`, `xxd -l 64 in.txt`,
		`file -b in.txt`, `file -m M in.txt`, `tree -L 2`, `sort -u in.txt`, `date -u`, `find . -name '*.go'`, `rg -n x src`,
		`sed -n 1,5p in.txt`, `ls -la`, `cat in.txt`, `env`,
	} {
		cases = append(cases, classCase{line, ModePlan, all, Allow})
	}
	runClass(t, e, cases)
}

// Class 7: a prefix rule allows its command with ordinary arguments, in
// the workspace. Options that run other programs, or read or write
// outside the workspace, and running outside it, still ask.
func TestClassPrefixRuleBoundary(t *testing.T) {
	e, _ := classEnv(t)
	o := e.outside
	allowed := rs{allow: []string{"Bash(go test:*)", "Bash(git diff:*)", "Bash(npm test:*)", "Bash(cat:*)", "Bash(make build:*)",
		"Bash(sed -n:*)", "Bash(grep:*)", "Bash(find:*)", "Bash(awk:*)", "Bash(tar:*)"}}
	var cases []classCase
	for _, line := range []string{
		`go test -exec /tmp/x ./...`, `go test -exec=/tmp/x ./...`, `go test --exec /tmp/x ./...`, `go test ./... -exec /tmp/x`,
		`go test -toolexec /tmp/x ./...`, `go test -toolexec='echo x' ./...`, `go test -vettool=/tmp/x ./...`,
		`go test -o ` + o + `/t.test -c ./...`, `go test -o=` + o + `/t.test -c`, `go test -c -o ../t.test`, `go test -c -o ~/t.test`,
		`go test -coverprofile=` + o + `/c.out ./...`, `go test -coverprofile ` + o + `/c.out ./...`, `go test -cpuprofile ` + o + `/p ./...`,
		`go test -memprofile=` + o + `/m ./...`, `go test -outputdir ` + o + ` ./...`, `go test -trace ` + o + `/t ./...`,
		`go test -blockprofile=` + o + `/b ./...`, `go test -mutexprofile=../m ./...`, `go test ./... -test.coverprofile=` + o + `/c`,
		`go test -ldflags=-extld=/tmp/x ./...`, `go test -ldflags '-linkmode=external -extld=/tmp/x' ./...`, `go test -C ` + o + ` ./...`,
		`go test -modfile=` + o + `/go.mod ./...`, `go test -overlay=` + o + `/o.json ./...`, `go test ` + o + `/pkg`,
		`go test ./... -args -test.coverprofile=` + o + `/c`, `go test -args ` + o + `/in`,
		`git diff --output=` + o + `/F`, `git diff --output ` + o + `/F`, `git diff --outp=` + o + `/F`, `git diff --no-index ` + o + `/f a.txt`,
		`git diff --no-index -- /etc/passwd /dev/null`, `git diff /etc/passwd /dev/null`, `git diff --ext-diff`, `git diff -O/etc/orderfile`,
		`git diff ../outside.txt a.txt`, `git diff --no-ind ~/.ssh/id_rsa a.txt`, `git diff HEAD:../../x`, `X=--output=/tmp/x; git diff "$X"`, `X='-exec /tmp/x'; go test $X ./...`,
		`set -- --script-shell=/tmp/x; npm test "$@"`, `git diff "$(echo --output=/tmp/x)"`, `for f in *; do git diff "$f"; done`,
		`read -r X; git diff "$X"`, `X="HEAD --output=/tmp/x"; git diff $X`, `f() { git diff "$1"; }; f --output=/tmp/x`,
		`git diff "${X:---output=/tmp/x}"`,
		`npm test --prefix ` + o, `npm test --prefix=` + o, `npm test --prefix ../other`, `npm test --userconfig ` + o + `/.npmrc`,
		`npm test --script-shell /tmp/x`, `npm test --script-shell=/tmp/x`, `npm test --node-options=--require=/tmp/x.js`,
		`npm test --workspace ../other`, `npm test --globalconfig=/tmp/g`, `npm test -- ` + o,
		`cat /etc/passwd`, `cat ~/.bashrc`, `cat ../x`, `grep -r x /etc`, `grep x ` + o + `/f`, `find / -name x`, `find .. -name x`,
		`sed -n 1p /etc/passwd`, `sed -n 'w /tmp/out' a.txt`, `sed -n '1e echo x' a.txt`, `sed -n -f /tmp/s a.txt`,
		`awk 'BEGIN{system("echo x")}'`, `awk '{print > "/tmp/o"}' a.txt`, `awk '{print $1}' /etc/passwd`,
		`make build -C ` + o, `make build -f ` + o + `/Makefile`, `make build CC=/tmp/x`, `make build --eval='x:'`,
		`tar -cf ` + o + `/x.tar .`, `tar -xf a.tar -C ` + o, `tar --to-command=cat -xf a.tar`, `tar czf /tmp/x.tgz .`,
	} {
		cases = append(cases, classCase{line, ModeDefault, allowed, Ask})
	}
	for _, line := range []string{`jq --rawfile x /etc/passwd -n '$x'`, `jq . /etc/passwd`, `jq --slurpfile s ../x -n '$s'`} {
		cases = append(cases, classCase{line, ModeDefault, rs{allow: []string{"Bash(jq:*)"}}, Ask})
	}
	cases = append(cases, classCase{`jq --arg name /etc/x -n '$name'`, ModeDefault, rs{allow: []string{"Bash(jq:*)"}}, Allow})
	for _, line := range []string{
		`go test ./...`, `go test -run TestX -v ./...`, `go test -coverprofile=c.out ./...`, `go test -race -count=1 ./src/...`,
		`go test -o bin/t.test -c ./src`, `go test -json ./...`, `go test -bench . -benchmem ./...`, `go test ./... -args -v`,
		`git diff`, `git diff HEAD~1 -- src`, `git diff --stat`, `git diff --output=patch.diff`, `git diff main...feature`,
		`git diff --no-index a.txt b.txt`, `git diff --cached`, `git diff -U0 HEAD`,
		`npm test`, `npm test -- --watch`, `npm test --silent`, `npm test -- -t 'a b'`,
		`cat a.txt`, `cat src/main.go`, `cat "$f"`, `grep -rn "$x" src`, `git diff "$X"`, `for f in a.txt b.txt; do git diff "$f"; done`,
		`X=HEAD; git diff "$X" -- src`, `go test -run "$T" ./...`, `find . -name '*.go'`, `sed -n 1,5p a.txt`, `sed -n '/x/p' a.txt`,
		`awk '{print $1}' a.txt`, `awk -F: '$1 > 5 {print}' a.txt`, `make build`, `make build V=1`, `tar -cf x.tar src`, `tar xzf a.tgz`,
	} {
		cases = append(cases, classCase{line, ModeDefault, allowed, Allow})
	}
	runClass(t, e, cases)

	// A command in a working directory outside the workspace.
	c := mustNew(t, Config{Rules: rules(Allow, userSettings, allowed.allow...), Home: e.home, Cwd: e.root})
	for _, tt := range []struct {
		line, workdir string
		want          Behavior
	}{
		{"go test ./...", o, Ask}, {"git diff", o, Ask}, {"npm test", "..", Ask}, {"cat a.txt", "/etc", Ask},
		{"go test ./...", "src", Allow}, {"git diff", e.root, Allow}, {"cat main.go", "src", Allow},
	} {
		in := call("bash", map[string]string{"command": tt.line, "workdir": tt.workdir})
		if d := c.Decide(context.Background(), in, e.root); d.Behavior != tt.want {
			t.Errorf("%q in %s: got %s, want %s (%s)", tt.line, tt.workdir, d.Behavior, tt.want, d.Reason)
		}
	}
}

// Class 8: files that make programs run code on their own (git's config
// and hooks, .envrc, npm and shell startup files, agent settings) ask
// before they change, in acceptEdits too, and plan mode refuses them.
func TestClassRepositoryConfig(t *testing.T) {
	e, p := classEnv(t)
	tools := rs{allow: []string{"Bash(git status:*)", "Bash(tee:*)", "Bash(sed:*)", "Bash(cp:*)", "Bash(git config:*)", "Bash(ln:*)", "Bash(mv:*)", "Bash(touch:*)", "Bash(chmod:*)"}}
	var cases []classCase
	for _, line := range []string{
		`echo '[core] fsmonitor = "touch ` + p + `"' >> .git/config`,
		`printf '[core]\n\tfsmonitor = x\n' >> .git/config`,
		`echo x > .git/hooks/pre-commit`, "cat > .git/hooks/post-checkout <<EOF\ntouch " + p + "\nEOF",
		`echo x >> .envrc`, `echo x > .npmrc`, `echo x >> .bashrc`, `echo x >> sub/.envrc`, `echo x > .git/info/attributes`,
		`echo x > .dsh/settings.json`, `echo x > .claude/settings.local.json`, `echo x > .mcp.json`, `echo x > .vscode/tasks.json`,
		`echo x > ./.git/config`, `echo x > src/../.git/config`, `echo x > .husky/pre-commit`, `echo x > .yarnrc.yml`, `echo x >> .profile`,
		`echo x >> .zshrc`, `echo x > .gitmodules`, `echo x > .git`, `cd .git && echo x >> config`, `cd .git/hooks; echo x > pre-push`,
		`tee -a .git/config <<< x`, `sed -i '$a x' .git/config`, `cp a.txt .git/hooks/pre-commit`, `git config core.fsmonitor 'touch ` + p + `'`,
		`git config --local core.pager less`, `ln -s /tmp/x .git/hooks/pre-commit`, `mv a.txt .envrc`, `touch .git/hooks/pre-commit`,
		`chmod +x .git/hooks/pre-commit`, `git config -f .git/config core.editor x`, `echo x > .GIT/config`,
		`echo x > .pre-commit-config.yaml`, `echo x >> sub/.git/config`,
	} {
		cases = append(cases, classCase{line, ModeAcceptEdits, tools, Ask}, classCase{line, ModePlan, tools, Deny})
	}
	cases = append(cases,
		classCase{`git remote add evil /tmp/r`, ModeAcceptEdits, rs{allow: []string{"Bash(git:*)"}}, Ask},
		classCase{`git branch --set-upstream-to=origin/x`, ModeAcceptEdits, rs{allow: []string{"Bash(git:*)"}}, Ask},
		classCase{`git remote -v`, ModeAcceptEdits, rs{allow: []string{"Bash(git:*)"}}, Allow},
		classCase{`echo x > notes.txt`, ModeAcceptEdits, tools, Allow},
		classCase{`echo x > gitconfig.txt`, ModeAcceptEdits, tools, Allow},
		classCase{`echo x > .gitignore`, ModeAcceptEdits, tools, Allow},
		classCase{`echo x > src/envrc.go`, ModeAcceptEdits, tools, Allow},
		classCase{`tee out.txt <<< x`, ModeDefault, tools, Allow},
		classCase{`sed -i s/a/b/ a.txt`, ModeDefault, tools, Allow},
		classCase{`git status`, ModeAcceptEdits, tools, Allow},
		classCase{`git config --get core.pager`, ModeDefault, tools, Allow},
		classCase{`echo x >> .git/config`, ModeBypass, tools, Allow},
		classCase{`echo x >> .git/config`, ModeAcceptEdits, rs{allow: []string{"Edit(.git/config)"}}, Allow},
	)
	runClass(t, e, cases)
}

// Class 8 for the edit and write tools.
func TestClassRepositoryConfigTools(t *testing.T) {
	e, _ := classEnv(t)
	if err := os.Symlink(filepath.Join(e.root, ".git", "config"), filepath.Join(e.root, "cfg")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	accept := mustNew(t, Config{Mode: ModeAcceptEdits, Home: e.home, Cwd: e.root})
	plan := mustNew(t, Config{Mode: ModePlan, Home: e.home, Cwd: e.root})
	for _, tt := range []struct {
		tool, path string
		want       Behavior
	}{
		{"write", ".git/config", Ask}, {"edit", ".git/config", Ask}, {"write", ".git/hooks/pre-commit", Ask}, {"write", ".envrc", Ask},
		{"write", "sub/.npmrc", Ask}, {"edit", ".bashrc", Ask}, {"write", "cfg", Ask}, {"write", e.root + "/.git/config", Ask},
		{"write", ".claude/settings.json", Ask}, {"write", ".dsh/settings.local.json", Ask}, {"write", ".mcp.json", Ask},
		{"write", "src/main.go", Allow}, {"edit", "notes.md", Allow}, {"write", ".gitignore", Allow},
	} {
		in := call(tt.tool, map[string]string{"file_path": tt.path, "content": "x", "old_string": "a", "new_string": "b"})
		if d := accept.Decide(ctx, in, e.root); d.Behavior != tt.want {
			t.Errorf("%s %s in acceptEdits: got %s, want %s (%s)", tt.tool, tt.path, d.Behavior, tt.want, d.Reason)
		}
		if d := plan.Decide(ctx, in, e.root); d.Behavior != Deny {
			t.Errorf("%s %s in plan: got %s (%s)", tt.tool, tt.path, d.Behavior, d.Reason)
		}
	}
}

// A sandbox that confines a command answers the questions the analysis
// asks for lack of certainty, but not those it cannot cover: a write to a
// file that runs code later outside it, or a line that might evade a deny
// rule about commands (which the sandbox knows nothing of).
func TestSandboxKeepsFirmQuestions(t *testing.T) {
	e, p := classEnv(t)
	ctx := context.Background()
	for _, tt := range []struct {
		line  string
		mode  Mode
		rules rs
		want  Behavior
	}{
		{`echo x >> .envrc`, ModeDefault, rs{}, Ask},
		{`echo x > .git/hooks/pre-commit`, ModeAcceptEdits, rs{}, Ask},
		{`X='$(touch ` + p + `)'; echo "${X@P}"`, ModeBypass, rs{deny: []string{"Bash(touch:*)"}}, Ask},
		{`mywrapper touch ` + p, ModeBypass, rs{deny: []string{"Bash(touch:*)"}}, Ask},
		{`X='$(touch ` + p + `)'; echo "${X@P}"`, ModeDefault, rs{}, Allow}, // confined: the sandbox answers
		{`make build`, ModeDefault, rs{}, Allow},
	} {
		var r []Rule
		r = append(r, rules(Deny, "/p/.dsh/settings.json", tt.rules.deny...)...)
		c := mustNew(t, Config{Mode: tt.mode, ModeSource: settings.LayerCLI, Rules: r, Home: e.home, Cwd: e.root})
		c.SetSandboxed(func(context.Context, tool.Call) (string, bool) { return "sandboxed: workspace-write", true })
		if d := c.Decide(ctx, bashCall(tt.line), e.root); d.Behavior != tt.want {
			t.Errorf("%q in %s, sandboxed: got %s, want %s (%s)", tt.line, tt.mode, d.Behavior, tt.want, d.Reason)
		}
	}
}
