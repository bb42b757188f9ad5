// diff.js — file changes as a unified or a side-by-side table. It reads the
// unified diff write and edit record in their result's meta (with line
// numbers), or, for logs without one, diffs the recorded hunks' texts.
'use strict';
(function (dsh) {
  const {el, visible} = dsh.dom;
  const MAX_ROWS = 4000;

  // parse reads a unified diff into files of hunks of rows
  // {kind: ' '|'-'|'+', text, old, new}.
  function parse(unified) {
    const files = [];
    let file = null, hunk = null, o = 0, n = 0;
    for (const line of String(unified).split('\n')) {
      if (line.startsWith('--- ')) {
        file = {path: line.slice(4).replace(/^a\//, ''), hunks: []};
        files.push(file);
        hunk = null;
        continue;
      }
      if (line.startsWith('+++ ') && file && !hunk) {
        const p = line.slice(4).replace(/^b\//, '');
        if (p !== '/dev/null') file.path = p;
        continue;
      }
      const m = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$/.exec(line);
      if (m) {
        if (!file) {
          file = {path: '', hunks: []};
          files.push(file);
        }
        o = parseInt(m[1], 10);
        n = parseInt(m[3], 10);
        hunk = {header: line, rows: []};
        file.hunks.push(hunk);
        continue;
      }
      if (!hunk) continue;
      const k = line[0];
      if (k === ' ') hunk.rows.push({kind: ' ', text: line.slice(1), old: o++, new: n++});
      else if (k === '-') hunk.rows.push({kind: '-', text: line.slice(1), old: o++});
      else if (k === '+') hunk.rows.push({kind: '+', text: line.slice(1), new: n++});
      else if (k === '\\') hunk.rows.push({kind: '\\', text: line});
    }
    return files;
  }

  // lineDiff is a small LCS diff of two texts' lines, for hunks recorded
  // without a unified form.
  function lineDiff(a, b) {
    const A = a === null || a === undefined ? [] : String(a).split('\n');
    const B = String(b).split('\n');
    if (A.length * B.length > 4e6) {
      return [...A.map((t, k) => ({kind: '-', text: t, old: k + 1})), ...B.map((t, k) => ({kind: '+', text: t, new: k + 1}))];
    }
    const dp = Array.from({length: A.length + 1}, () => new Uint32Array(B.length + 1));
    for (let i = A.length - 1; i >= 0; i--) {
      for (let j = B.length - 1; j >= 0; j--) dp[i][j] = A[i] === B[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
    }
    const rows = [];
    let i = 0, j = 0;
    while (i < A.length || j < B.length) {
      if (i < A.length && j < B.length && A[i] === B[j]) rows.push({kind: ' ', text: A[i], old: ++i, new: ++j});
      else if (j < B.length && (i >= A.length || dp[i][j + 1] >= dp[i + 1][j])) rows.push({kind: '+', text: B[j], new: ++j});
      else rows.push({kind: '-', text: A[i], old: ++i});
    }
    return rows;
  }

  // fromMeta returns the files of a write/edit result's meta, or null.
  function fromMeta(meta) {
    if (!meta || typeof meta !== 'object') return null;
    if (typeof meta.unified === 'string' && meta.unified.includes('@@')) {
      const files = parse(meta.unified);
      if (files.length) return files;
    }
    if (Array.isArray(meta.diffs) && meta.diffs.length) {
      const byPath = new Map();
      for (const d of meta.diffs) {
        if (!d || typeof d.newText !== 'string') continue;
        let f = byPath.get(d.path);
        if (!f) byPath.set(d.path, (f = {path: String(d.path || ''), hunks: []}));
        f.hunks.push({header: '', rows: lineDiff(d.oldText, d.newText)});
      }
      return byPath.size ? [...byPath.values()] : null;
    }
    return null;
  }

  function stats(files) {
    let add = 0, del = 0;
    for (const f of files) for (const h of f.hunks) for (const r of h.rows) {
      if (r.kind === '+') add++;
      else if (r.kind === '-') del++;
    }
    return {add, del};
  }

  function code(text, lang) {
    const c = el('code');
    c.appendChild(dsh.hl.highlight(visible(text), lang));
    return c;
  }

  function unifiedTable(file, lang) {
    const body = el('tbody');
    let count = 0;
    for (const h of file.hunks) {
      if (h.header) body.appendChild(el('tr', {class: 'd-hunk'}, el('td', {colspan: 3}, h.header)));
      for (const r of h.rows) {
        if (++count > MAX_ROWS) break;
        const cls = r.kind === '+' ? 'd-ins' : r.kind === '-' ? 'd-del' : r.kind === '\\' ? 'd-note' : 'd-ctx';
        body.appendChild(el('tr', {class: cls},
          el('td', {class: 'd-num'}, r.old === undefined ? '' : String(r.old)),
          el('td', {class: 'd-num'}, r.new === undefined ? '' : String(r.new)),
          el('td', {class: 'd-text'}, el('span', {class: 'd-sign', 'aria-hidden': 'true'}, r.kind === '\\' ? '' : r.kind), code(r.text, lang))));
      }
    }
    return el('table', {class: 'diff unified'}, body);
  }

  // splitTable pairs each run of deletions with the insertions after it.
  function splitTable(file, lang) {
    const body = el('tbody');
    const cell = (r, side) => {
      if (!r) return [el('td', {class: 'd-num d-empty'}), el('td', {class: 'd-text d-empty'})];
      const cls = r.kind === ' ' ? 'd-ctx' : side === 'old' ? 'd-del' : 'd-ins';
      return [el('td', {class: 'd-num ' + cls}, String(side === 'old' ? r.old : r.new)), el('td', {class: 'd-text ' + cls}, code(r.text, lang))];
    };
    let count = 0;
    for (const h of file.hunks) {
      if (h.header) body.appendChild(el('tr', {class: 'd-hunk'}, el('td', {colspan: 4}, h.header)));
      const rows = h.rows.filter((r) => r.kind !== '\\');
      for (let k = 0; k < rows.length && count < MAX_ROWS;) {
        if (rows[k].kind === ' ') {
          body.appendChild(el('tr', null, cell(rows[k], 'old'), cell(rows[k], 'new')));
          k++;
          count++;
          continue;
        }
        const del = [], ins = [];
        while (k < rows.length && rows[k].kind === '-') del.push(rows[k++]);
        while (k < rows.length && rows[k].kind === '+') ins.push(rows[k++]);
        for (let x = 0; x < Math.max(del.length, ins.length); x++, count++) {
          body.appendChild(el('tr', null, cell(del[x], 'old'), cell(ins[x], 'new')));
        }
      }
    }
    return el('table', {class: 'diff split'}, body);
  }

  // view renders files with a unified/side-by-side switch. mode is the
  // initial layout; the choice is shared through onMode.
  function view(files, mode, onMode) {
    const root = el('div', {class: 'diffview'});
    let current = mode === 'split' ? 'split' : 'unified';
    const tables = el('div', {class: 'diff-files'});
    const draw = () => {
      dsh.dom.clear(tables);
      for (const f of files) {
        const lang = dsh.hl.fromPath(f.path);
        const st = stats([f]);
        tables.appendChild(el('div', {class: 'diff-file'},
          el('div', {class: 'diff-path'}, el('span', null, visible(f.path || '(file)')), ' ',
            el('span', {class: 'd-stat-add'}, '+' + st.add), ' ', el('span', {class: 'd-stat-del'}, '−' + st.del)),
          el('div', {class: 'diff-scroll'}, current === 'split' ? splitTable(f, lang) : unifiedTable(f, lang))));
      }
      uBtn.setAttribute('aria-pressed', String(current === 'unified'));
      sBtn.setAttribute('aria-pressed', String(current === 'split'));
    };
    const set = (m) => {
      current = m;
      draw();
      if (onMode) onMode(m);
    };
    const uBtn = el('button', {type: 'button', class: 'seg', 'data-mode': 'unified', on: {click: () => set('unified')}}, 'Unified');
    const sBtn = el('button', {type: 'button', class: 'seg', 'data-mode': 'split', on: {click: () => set('split')}}, 'Side by side');
    root.appendChild(el('div', {class: 'diff-bar', role: 'group', 'aria-label': 'Diff layout'}, uBtn, sBtn));
    root.appendChild(tables);
    draw();
    root.setMode = (m) => {
      if (m !== current) {
        current = m;
        draw();
      }
    };
    return root;
  }

  dsh.diff = {parse, fromMeta, view, stats, lineDiff};
})(dsh);
