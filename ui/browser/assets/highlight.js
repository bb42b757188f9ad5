// highlight.js — syntax colouring for code blocks, file contents and
// commands: a table of languages (keywords, comment and string forms)
// read by one scanner that emits <span class="tok-…"> around text nodes.
// It is a colouring, not a parser: wrong guesses only change colours.
'use strict';
(function (dsh) {
  const {el} = dsh.dom;
  const MAX = 200 * 1024; // longer code is shown uncoloured

  const words = (s) => new Set(s.split(/\s+/).filter(Boolean));
  const C_LIKE = {line: ['//'], block: [['/*', '*/']], str: ['"', "'"]};
  const HASH = {line: ['#'], block: [], str: ['"', "'"]};

  const L = {
    go: {...C_LIKE, str: ['"', "'", '`'], raw: '`',
      kw: words('break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var'),
      types: words('bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string uint uint8 uint16 uint32 uint64 uintptr any comparable'),
      lit: words('true false nil iota'),
      builtin: words('append cap clear close complex copy delete imag len make max min new panic print println real recover')},
    javascript: {...C_LIKE, str: ['"', "'", '`'],
      kw: words('async await break case catch class const continue debugger default delete do else export extends finally for from function if import in instanceof let new of return static super switch this throw try typeof var void while with yield as'),
      types: words('Array Object String Number Boolean Promise Map Set Error RegExp Date JSON Math Symbol BigInt'),
      lit: words('true false null undefined NaN Infinity')},
    typescript: null,
    python: {...HASH, str: ['"""', "'''", '"', "'"],
      kw: words('and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case'),
      types: words('int float str bytes bool list dict set tuple object type complex frozenset'),
      lit: words('True False None self cls'),
      builtin: words('print len range open isinstance enumerate zip map filter sorted sum min max abs any all repr super getattr setattr hasattr')},
    bash: {...HASH, str: ['"', "'"], shell: true,
      kw: words('if then else elif fi case esac for while until do done in function select time return exit export local readonly declare unset shift break continue source alias set trap eval exec'),
      builtin: words('echo cd pwd ls cat grep sed awk find xargs rm mv cp mkdir touch chmod chown ln head tail sort uniq wc tr cut tee git go npm node python3 python make curl wget test printf read sleep kill ps env sudo apt-get tar diff patch jq rg')},
    rust: {...C_LIKE,
      kw: words('as async await break const continue crate dyn else enum extern fn for if impl in let loop match mod move mut pub ref return static struct super trait type unsafe use where while'),
      types: words('i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool char str String Vec Option Result Box Self'),
      lit: words('true false None Some Ok Err self')},
    c: {...C_LIKE, pre: true,
      kw: words('auto break case const continue default do else enum extern for goto if inline register restrict return sizeof static struct switch typedef union volatile while class namespace template typename public private protected virtual override new delete try catch throw using constexpr noexcept nullptr'),
      types: words('void char short int long float double signed unsigned bool size_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t std string vector auto'),
      lit: words('true false NULL nullptr')},
    java: {...C_LIKE,
      kw: words('abstract assert break case catch class const continue default do else enum extends final finally for if implements import instanceof interface native new package private protected public return static super switch synchronized this throw throws transient try void volatile while var record fun val when object companion data sealed override suspend namespace using async await get set'),
      types: words('boolean byte char double float int long short String Object Integer List Map Unit Any'),
      lit: words('true false null')},
    json: {line: [], block: [], str: ['"'], keyStrings: true, kw: words(''), lit: words('true false null')},
    yaml: {...HASH, yamlKeys: true, kw: words(''), lit: words('true false null yes no on off ~')},
    toml: {...HASH, yamlKeys: true, kw: words(''), lit: words('true false')},
    sql: {line: ['--'], block: [['/*', '*/']], str: ["'", '"'], ci: true,
      kw: words('select from where and or not insert into values update set delete create table index drop alter add column primary key foreign references join left right inner outer on group by order having limit offset as distinct union all exists in is null like between case when then else end begin commit rollback returning with default unique constraint if'),
      types: words('int integer bigint smallint text varchar char boolean bool timestamp timestamptz date real double numeric serial bigserial jsonb json bytea uuid'),
      lit: words('true false null')},
    css: {line: [], block: [['/*', '*/']], str: ['"', "'"], kw: words('important media supports keyframes import from to'), lit: words('')},
    ruby: {...HASH, kw: words('alias and begin break case class def defined do else elsif end ensure for if in module next not or redo rescue retry return self super then undef unless until when while yield require attr_accessor'), lit: words('true false nil')},
    lua: {line: ['--'], block: [['--[[', ']]']], str: ['"', "'"], kw: words('and break do else elseif end for function goto if in local not or repeat return then until while'), lit: words('true false nil')},
    php: {...C_LIKE, line: ['//', '#'], kw: words('abstract and array as break case catch class clone const continue declare default do echo else elseif empty enddeclare endfor endforeach endif endswitch endwhile extends final finally fn for foreach function global if implements include instanceof interface isset list namespace new or print private protected public require return static switch throw trait try unset use var while yield'), lit: words('true false null')},
    makefile: {...HASH, kw: words('ifeq ifneq ifdef ifndef else endif include define endef export override'), lit: words('')},
    dockerfile: {...HASH, ci: true, kw: words('from run cmd label expose env add copy entrypoint volume user workdir arg onbuild stopsignal healthcheck shell as'), lit: words('')},
  };
  L.typescript = {...L.javascript, kw: new Set([...L.javascript.kw, ...words('interface type enum implements private public protected readonly declare namespace abstract keyof infer is satisfies')]),
    types: new Set([...L.javascript.types, ...words('string number boolean any unknown never void object Record Partial Readonly')])};
  L.kotlin = L.java;
  L.csharp = L.java;
  L.swift = L.java;
  L.scala = L.java;
  L.cpp = L.c;
  L.zig = L.rust;

  const ALIAS = {golang: 'go', js: 'javascript', jsx: 'javascript', mjs: 'javascript', cjs: 'javascript', node: 'javascript',
    ts: 'typescript', tsx: 'typescript', mts: 'typescript', py: 'python', python3: 'python', sh: 'bash', shell: 'bash',
    zsh: 'bash', console: 'bash', shellsession: 'bash', ksh: 'bash', fish: 'bash', yml: 'yaml', rs: 'rust', 'c++': 'cpp',
    cc: 'cpp', cxx: 'cpp', hpp: 'cpp', hh: 'cpp', h: 'c', 'objective-c': 'c', objc: 'c', cs: 'csharp', 'c#': 'csharp',
    kt: 'kotlin', kts: 'kotlin', rb: 'ruby', jsonc: 'json', json5: 'json', jsonl: 'json', ndjson: 'json', geojson: 'json',
    scss: 'css', less: 'css', make: 'makefile', mk: 'makefile', docker: 'dockerfile', psql: 'sql', postgres: 'sql',
    sqlite: 'sql', mysql: 'sql', ini: 'toml', cfg: 'toml', conf: 'toml', env: 'bash', proto: 'c', groovy: 'java',
    gradle: 'java', sc: 'scala', mod: 'go', patch: 'diff', udiff: 'diff'};

  const EXT = {go: 'go', js: 'javascript', mjs: 'javascript', cjs: 'javascript', jsx: 'javascript', ts: 'typescript',
    tsx: 'typescript', py: 'python', sh: 'bash', bash: 'bash', zsh: 'bash', rs: 'rust', c: 'c', h: 'c', cc: 'cpp',
    cpp: 'cpp', hpp: 'cpp', java: 'java', kt: 'kotlin', cs: 'csharp', swift: 'swift', rb: 'ruby', php: 'php', lua: 'lua',
    json: 'json', jsonl: 'json', yaml: 'yaml', yml: 'yaml', toml: 'toml', sql: 'sql', css: 'css', scss: 'css',
    html: 'html', htm: 'html', xml: 'xml', svg: 'xml', md: 'markdown', diff: 'diff', patch: 'diff', mod: 'go',
    sum: '', mk: 'makefile', zig: 'zig', scala: 'scala', proto: 'c'};

  function resolve(lang) {
    const l = (lang || '').toLowerCase();
    return ALIAS[l] || l;
  }

  // fromPath names the language of a file by its extension or name.
  function fromPath(path) {
    const base = String(path || '').split('/').pop().toLowerCase();
    if (base === 'makefile' || base === 'gnumakefile') return 'makefile';
    if (base === 'dockerfile' || base.startsWith('dockerfile.')) return 'dockerfile';
    const dot = base.lastIndexOf('.');
    return dot < 0 ? '' : EXT[base.slice(dot + 1)] || '';
  }

  const reNum = /^(?:0[xX][\da-fA-F_]+|0[bBoO][0-7_]+|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?[a-zA-Z]{0,3})/;
  const reIdent = /^[A-Za-z_$@][\w$]*/;

  // tokens splits code into [class, text] pairs ("" for plain text).
  function tokens(code, spec) {
    const out = [];
    let plain = '';
    const emit = (cls, text) => {
      if (!cls) {
        plain += text;
        return;
      }
      if (plain) out.push(['', plain]);
      plain = '';
      out.push([cls, text]);
    };
    const n = code.length;
    let i = 0, lineStart = true;
    while (i < n) {
      const c = code[i];
      if (c === '\n') {
        emit('', c);
        i++;
        lineStart = true;
        continue;
      }
      let matched = false;
      for (const [open, close] of spec.block || []) {
        if (code.startsWith(open, i)) {
          const e = code.indexOf(close, i + open.length);
          const end = e < 0 ? n : e + close.length;
          emit('tok-com', code.slice(i, end));
          i = end;
          matched = true;
          break;
        }
      }
      if (matched) continue;
      for (const lc of spec.line || []) {
        if (code.startsWith(lc, i) && (!spec.shell || i === 0 || /\s/.test(code[i - 1]))) {
          const e = code.indexOf('\n', i);
          const end = e < 0 ? n : e;
          emit('tok-com', code.slice(i, end));
          i = end;
          matched = true;
          break;
        }
      }
      if (matched) continue;
      if (spec.pre && lineStart && c === '#') {
        const e = code.indexOf('\n', i);
        const end = e < 0 ? n : e;
        emit('tok-meta', code.slice(i, end));
        i = end;
        continue;
      }
      for (const q of spec.str || []) {
        if (code.startsWith(q, i)) {
          let j = i + q.length;
          const raw = spec.raw === q || (spec.shell && q === "'");
          while (j < n && !code.startsWith(q, j)) {
            if (code[j] === '\\' && !raw) j++;
            else if (code[j] === '\n' && q.length === 1 && q !== '`' && !spec.shell) break;
            j++;
          }
          const end = Math.min(n, code.startsWith(q, j) ? j + q.length : j);
          let cls = 'tok-str';
          if (spec.keyStrings && /^\s*:/.test(code.slice(end, end + 20))) cls = 'tok-attr';
          emit(cls, code.slice(i, end));
          i = end;
          matched = true;
          break;
        }
      }
      if (matched) continue;
      if (spec.shell && c === '$') {
        const m = /^\$(?:\{[^}\n]*\}|[A-Za-z_]\w*|[0-9@#?$!*-])/.exec(code.slice(i, i + 256));
        if (m) {
          emit('tok-var', m[0]);
          i += m[0].length;
          continue;
        }
      }
      if (/[0-9]/.test(c) && (i === 0 || !/[\w$]/.test(code[i - 1]))) {
        const m = reNum.exec(code.slice(i, i + 64));
        if (m) {
          emit('tok-num', m[0]);
          i += m[0].length;
          lineStart = false;
          continue;
        }
      }
      if (/[A-Za-z_$@]/.test(c)) {
        const m = reIdent.exec(code.slice(i, i + 256));
        const w = m[0];
        const key = spec.ci ? w.toLowerCase() : w;
        let cls = '';
        if (spec.yamlKeys && lineStart && /^\s*[:=]/.test(code.slice(i + w.length, i + w.length + 8))) cls = 'tok-attr';
        else if (spec.kw && spec.kw.has(key)) cls = 'tok-kw';
        else if (spec.lit && spec.lit.has(key)) cls = 'tok-lit';
        else if (spec.types && spec.types.has(key)) cls = 'tok-type';
        else if (spec.builtin && spec.builtin.has(key)) cls = 'tok-fn';
        else if (code[i + w.length] === '(') cls = 'tok-fn';
        emit(cls, w);
        i += w.length;
        lineStart = false;
        continue;
      }
      if (!/\s/.test(c)) lineStart = false;
      emit('', c);
      i++;
    }
    if (plain) out.push(['', plain]);
    return out;
  }

  function markupTokens(code) {
    const out = [];
    const re = /<!--[\s\S]*?(?:-->|$)|<\/?[A-Za-z][\w:.-]*|\/?>|"[^"]*"|'[^']*'|[A-Za-z_:][\w:.-]*(?==)/g;
    let last = 0, inTag = false, m;
    while ((m = re.exec(code))) {
      const t = m[0];
      if (!inTag && !(t.startsWith('<'))) continue;
      if (m.index > last) out.push(['', code.slice(last, m.index)]);
      if (t.startsWith('<!--')) out.push(['tok-com', t]);
      else if (t.startsWith('<')) {
        out.push(['tok-kw', t]);
        inTag = true;
      } else if (t.endsWith('>')) {
        out.push(['tok-kw', t]);
        inTag = false;
      } else if (t[0] === '"' || t[0] === "'") out.push(['tok-str', t]);
      else out.push(['tok-attr', t]);
      last = m.index + t.length;
    }
    if (last < code.length) out.push(['', code.slice(last)]);
    return out;
  }

  function diffTokens(code) {
    return code.split(/(?<=\n)/).map((line) => {
      if (line.startsWith('+++') || line.startsWith('---')) return ['tok-meta', line];
      if (line.startsWith('@@')) return ['tok-hunk', line];
      if (line.startsWith('+')) return ['tok-ins', line];
      if (line.startsWith('-')) return ['tok-del', line];
      return ['', line];
    });
  }

  // highlight returns code as a fragment of text nodes and spans.
  function highlight(code, lang) {
    const frag = document.createDocumentFragment();
    const name = resolve(lang);
    let toks;
    if (code.length > MAX) toks = [['', code]];
    else if (name === 'diff') toks = diffTokens(code);
    else if (name === 'html' || name === 'xml' || name === 'svg' || name === 'vue') toks = markupTokens(code);
    else if (L[name]) toks = tokens(code, L[name]);
    else toks = [['', code]];
    for (const [cls, text] of toks) {
      frag.appendChild(cls ? el('span', {class: cls}, text) : document.createTextNode(text));
    }
    return frag;
  }

  dsh.hl = {highlight, fromPath, resolve};
})(dsh);
