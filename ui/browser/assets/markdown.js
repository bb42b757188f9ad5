// markdown.js — Markdown to DOM nodes, for model answers. It reads the
// CommonMark constructs models write (headings, paragraphs, emphasis,
// code spans and fences, lists with task items, quotes, GFM tables,
// links, autolinks, rules) and builds elements directly: raw HTML in the
// source stays text, links are followed only to http(s) and mailto, images
// are never loaded (they become links). Rendering the same text twice
// gives the same nodes, and a growing text changes only its last blocks,
// so streamed answers do not jump when they complete.
'use strict';
(function (dsh) {
  const {el, link, visible} = dsh.dom;

  // Inputs beyond this are shown as preformatted text: the parser is
  // linear on what models write, and this bounds what a hostile input costs.
  const MAX_SOURCE = 256 * 1024;
  const MAX_LINK_LABEL = 1000;

  const reFence = /^( {0,3})(`{3,}|~{3,})[ \t]*([^\s`]*)([^`]*)$/;
  const reATX = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
  const reSetext = /^ {0,3}(=+|-+)[ \t]*$/;
  const reHR = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
  const reQuote = /^ {0,3}>/;
  const reItem = /^( {0,3})([-+*]|\d{1,9}[.)])([ \t]+|$)(.*)$/;
  const reDelim = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;
  const reBlank = /^[ \t]*$/;

  function indentOf(line) {
    let n = 0;
    for (const c of line) {
      if (c === ' ') n++;
      else if (c === '\t') n += 4 - (n % 4);
      else break;
    }
    return n;
  }

  // dedent removes up to n columns of leading whitespace.
  function dedent(line, n) {
    let i = 0, col = 0;
    while (i < line.length && col < n) {
      if (line[i] === ' ') col++;
      else if (line[i] === '\t') col += 4 - (col % 4);
      else break;
      i++;
    }
    return line.slice(i);
  }

  function startsBlock(line) {
    return reFence.test(line) || reATX.test(line) || reHR.test(line) || reQuote.test(line);
  }

  // parseBlocks turns lines into a block tree. Each top-level block keeps
  // its source lines (src), which the streaming renderer compares.
  function parseBlocks(lines, top) {
    const out = [];
    let para = null, paraStart = 0;
    const push = (b, from, to) => {
      if (top) b.src = lines.slice(from, to).join('\n');
      out.push(b);
    };
    const flush = (to) => {
      if (para) push({t: 'p', text: para.join('\n')}, paraStart, to);
      para = null;
    };
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if (reBlank.test(line)) {
        flush(i);
        i++;
        continue;
      }
      if ((m = reFence.exec(line)) && !(m[2][0] === '`' && m[4].includes('`'))) {
        flush(i);
        const from = i, indent = m[1].length, fence = m[2];
        const close = new RegExp('^ {0,3}' + (fence[0] === '`' ? '`' : '~') + '{' + fence.length + ',}[ \\t]*$');
        const body = [];
        i++;
        while (i < lines.length && !close.test(lines[i])) body.push(dedent(lines[i++], indent));
        const closed = i < lines.length;
        if (closed) i++;
        push({t: 'code', lang: m[3].toLowerCase(), text: body.join('\n'), open: !closed}, from, i);
        continue;
      }
      if ((m = reATX.exec(line))) {
        flush(i);
        push({t: 'h', level: m[1].length, text: m[2] || ''}, i, i + 1);
        i++;
        continue;
      }
      if (para && (m = reSetext.exec(line)) && !reItem.test(para[0])) {
        push({t: 'h', level: m[1][0] === '=' ? 1 : 2, text: para.join('\n')}, paraStart, i + 1);
        para = null;
        i++;
        continue;
      }
      if (reHR.test(line)) {
        flush(i);
        push({t: 'hr'}, i, i + 1);
        i++;
        continue;
      }
      if (reQuote.test(line)) {
        flush(i);
        const from = i, inner = [];
        while (i < lines.length && (reQuote.test(lines[i]) || (inner.length && !reBlank.test(lines[i]) && !startsBlock(lines[i]) && !reItem.test(lines[i]) && !reBlank.test(inner[inner.length - 1])))) {
          inner.push(reQuote.test(lines[i]) ? lines[i].replace(/^ {0,3}> ?/, '') : lines[i]);
          i++;
        }
        push({t: 'quote', children: parseBlocks(inner, false)}, from, i);
        continue;
      }
      if ((m = reItem.exec(line)) && (!para || (m[4] !== '' && (!/\d/.test(m[2]) || m[2].startsWith('1'))))) {
        flush(i);
        const from = i;
        const list = {t: 'list'};
        i = parseList(lines, i, list);
        push(list, from, i);
        continue;
      }
      if (!para && line.includes('|') && i + 1 < lines.length && reDelim.test(lines[i + 1]) && lines[i + 1].includes('-')) {
        const head = splitRow(line), delim = splitRow(lines[i + 1]);
        if (head.length === delim.length) {
          const from = i;
          const align = delim.map((d) => (d.startsWith(':') && d.endsWith(':') ? 'center' : d.endsWith(':') ? 'right' : d.startsWith(':') ? 'left' : ''));
          const rows = [];
          i += 2;
          while (i < lines.length && !reBlank.test(lines[i]) && lines[i].includes('|') && !startsBlock(lines[i])) {
            const cells = splitRow(lines[i++]);
            while (cells.length < head.length) cells.push('');
            rows.push(cells.slice(0, head.length));
          }
          push({t: 'table', head, align, rows}, from, i);
          continue;
        }
      }
      if (!para && indentOf(line) >= 4) {
        const from = i, body = [];
        while (i < lines.length && (indentOf(lines[i]) >= 4 || reBlank.test(lines[i]))) body.push(dedent(lines[i++], 4));
        while (body.length && reBlank.test(body[body.length - 1])) body.pop();
        push({t: 'code', lang: '', text: body.join('\n')}, from, i);
        continue;
      }
      if (!para) {
        para = [];
        paraStart = i;
      }
      para.push(line.replace(/^ {0,3}/, ''));
      i++;
    }
    flush(lines.length);
    return out;
  }

  function listKind(m) {
    const ordered = /\d/.test(m[2]);
    return {ordered, delim: ordered ? m[2].slice(-1) : m[2]};
  }

  function parseList(lines, i, list) {
    const first = reItem.exec(lines[i]);
    const kind = listKind(first);
    list.ordered = kind.ordered;
    list.start = kind.ordered ? parseInt(first[2], 10) : 1;
    list.items = [];
    list.loose = false;
    while (i < lines.length) {
      const m = reItem.exec(lines[i]);
      if (!m) break;
      const k = listKind(m);
      if (k.ordered !== kind.ordered || k.delim !== kind.delim) break;
      const pad = m[3].length === 0 ? 1 : m[3].length > 4 ? 1 : m[3].length;
      const width = m[1].length + m[2].length + pad;
      const body = [m[3].length > 4 ? m[3].slice(1) + m[4] : m[4]];
      i++;
      let blank = false;
      while (i < lines.length) {
        const l = lines[i];
        if (reBlank.test(l)) {
          body.push('');
          blank = true;
          i++;
          continue;
        }
        if (indentOf(l) >= width) {
          body.push(dedent(l, width));
          blank = false;
          i++;
          continue;
        }
        if (blank || reItem.test(l) || startsBlock(l)) break;
        body.push(l); // lazy continuation of the item's paragraph
        i++;
      }
      while (body.length > 1 && reBlank.test(body[body.length - 1])) {
        body.pop();
        if (i < lines.length && reItem.test(lines[i])) list.loose = true;
      }
      if (body.slice(1).some((l, j) => reBlank.test(l) && j + 2 < body.length)) list.loose = true;
      let task = null;
      const tm = /^\[([ xX])\](?:[ \t]+|$)/.exec(body[0]);
      if (tm) {
        task = tm[1] !== ' ';
        body[0] = body[0].slice(tm[0].length);
      }
      list.items.push({task, children: parseBlocks(body, false)});
    }
    return i;
  }

  function splitRow(line) {
    let s = line.trim();
    if (s.startsWith('|')) s = s.slice(1);
    if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
    const cells = [];
    let cur = '', code = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s[i];
      if (c === '\\' && s[i + 1] === '|') {
        cur += '|';
        i++;
      } else if (c === '`') {
        code ^= 1;
        cur += c;
      } else if (c === '|' && !code) {
        cells.push(cur.trim());
        cur = '';
      } else {
        cur += c;
      }
    }
    cells.push(cur.trim());
    return cells;
  }

  // ---- inline ----

  const ENT = {amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0', copy: '©', reg: '®', mdash: '—',
    ndash: '–', hellip: '…', laquo: '«', raquo: '»', rarr: '→', larr: '←', times: '×', middot: '·', deg: '°'};
  function decodeEntities(s) {
    if (s.indexOf('&') < 0) return s;
    return s.replace(/&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([A-Za-z]{2,8}));/g, (all, dec, hex, name) => {
      if (name) return Object.prototype.hasOwnProperty.call(ENT, name) ? ENT[name] : all;
      const n = dec ? parseInt(dec, 10) : parseInt(hex, 16);
      if (n === 0 || n > 0x10ffff || (n >= 0xd800 && n <= 0xdfff)) return '\ufffd';
      return String.fromCodePoint(n);
    });
  }

  const PUNCT = /[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/;
  const WORD = /[\p{L}\p{N}]/u;
  const SPACE = /\s/;

  // Inline parsing state: failed searches are remembered per delimiter,
  // so a text full of unmatched "*" or "`" costs linear time, not
  // quadratic.
  class Inline {
    constructor(src) {
      this.src = src;
      this.noClose = new Map(); // key -> position from which a search failed
    }

    // closing finds the next run of ch of exactly-or-more len characters
    // that can close emphasis, from position from.
    closing(from, ch, len) {
      const key = ch + len;
      const failed = this.noClose.get(key);
      if (failed !== undefined && from >= failed) return -1;
      const s = this.src;
      for (let j = from; j < s.length; j++) {
        const c = s[j];
        if (c === '\\') {
          j++;
          continue;
        }
        if (c === '`') {
          let r = 1;
          while (s[j + r] === '`') r++;
          const end = this.codeEnd(j + r, r);
          j = end >= 0 ? end + r - 1 : j + r - 1;
          continue;
        }
        if (c === ch) {
          let r = 1;
          while (s[j + r] === ch) r++;
          const prev = s[j - 1];
          if (r >= len && prev !== undefined && !SPACE.test(prev) && (ch !== '_' || !WORD.test(s[j + r] || ''))) return j;
          j += r - 1;
        }
      }
      this.noClose.set(key, Math.min(from, failed === undefined ? Infinity : failed));
      return -1;
    }

    // codeEnd finds a closing backtick run of exactly n characters.
    codeEnd(from, n) {
      const key = '`' + n;
      const failed = this.noClose.get(key);
      if (failed !== undefined && from >= failed) return -1;
      const s = this.src;
      let j = s.indexOf('`', from);
      while (j >= 0) {
        let r = 1;
        while (s[j + r] === '`') r++;
        if (r === n) return j;
        j = s.indexOf('`', j + r);
      }
      this.noClose.set(key, Math.min(from, failed === undefined ? Infinity : failed));
      return -1;
    }

    // linkAt reads [label](dest "title") at i (s[i] === '[').
    linkAt(i) {
      const s = this.src;
      let depth = 0, j = i;
      const limit = Math.min(s.length, i + MAX_LINK_LABEL);
      for (; j < limit; j++) {
        const c = s[j];
        if (c === '\\') {
          j++;
          continue;
        }
        if (c === '`') {
          let r = 1;
          while (s[j + r] === '`') r++;
          const end = this.codeEnd(j + r, r);
          if (end >= 0) j = end + r - 1;
          else j += r - 1;
          continue;
        }
        if (c === '[') depth++;
        else if (c === ']' && --depth === 0) break;
      }
      if (j >= limit || s[j] !== ']' || s[j + 1] !== '(') return null;
      const label = s.slice(i + 1, j);
      let k = j + 2;
      while (s[k] === ' ' || s[k] === '\n') k++;
      let dest = '';
      if (s[k] === '<') {
        const e = s.indexOf('>', k);
        if (e < 0 || s.slice(k, e).includes('\n')) return null;
        dest = s.slice(k + 1, e);
        k = e + 1;
      } else {
        let par = 0;
        const st = k;
        for (; k < s.length && k - st < 4096; k++) {
          const c = s[k];
          if (c === '\\') {
            k++;
            continue;
          }
          if (SPACE.test(c)) break;
          if (c === '(') par++;
          else if (c === ')') {
            if (par === 0) break;
            par--;
          }
        }
        dest = s.slice(st, k);
      }
      while (s[k] === ' ' || s[k] === '\n') k++;
      let title = '';
      if (s[k] === '"' || s[k] === "'" || s[k] === '(') {
        const q = s[k] === '(' ? ')' : s[k];
        const e = s.indexOf(q, k + 1);
        if (e < 0) return null;
        title = s.slice(k + 1, e);
        k = e + 1;
        while (s[k] === ' ' || s[k] === '\n') k++;
      }
      if (s[k] !== ')') return null;
      return {label, dest: decodeEntities(dest.replace(/\\([!-/:-@[-`{-~])/g, '$1')), title: decodeEntities(title), end: k + 1};
    }

    // render appends the inline content of src[from:to) to parent.
    render(parent, from, to, noLinks) {
      const s = this.src;
      let buf = '';
      const flush = () => {
        if (buf) parent.appendChild(document.createTextNode(decodeEntities(buf)));
        buf = '';
      };
      let i = from;
      while (i < to) {
        const c = s[i];
        if (c === '\\' && i + 1 < to) {
          const n = s[i + 1];
          if (n === '\n') {
            flush();
            parent.appendChild(el('br'));
            i += 2;
            continue;
          }
          if (PUNCT.test(n)) {
            flush();
            parent.appendChild(document.createTextNode(n));
            i += 2;
            continue;
          }
        }
        if (c === '`') {
          let r = 1;
          while (s[i + r] === '`') r++;
          const end = this.codeEnd(i + r, r);
          if (end >= 0 && end < to) {
            flush();
            let code = s.slice(i + r, end).replace(/\n/g, ' ');
            if (code.length > 2 && code[0] === ' ' && code[code.length - 1] === ' ' && code.trim() !== '') code = code.slice(1, -1);
            parent.appendChild(el('code', null, visible(code)));
            i = end + r;
            continue;
          }
          buf += s.slice(i, i + r);
          i += r;
          continue;
        }
        if (c === '*' || c === '_' || c === '~') {
          let r = 1;
          while (s[i + r] === c) r++;
          const next = s[i + r] || '', prev = i > 0 ? s[i - 1] : ' ';
          const opens = next !== '' && !SPACE.test(next) && (c !== '_' || !WORD.test(prev)) && !(PUNCT.test(next) && !SPACE.test(prev) && !PUNCT.test(prev));
          if (opens && (c !== '~' || r === 2)) {
            let done = false;
            for (const len of c === '~' ? [2] : [Math.min(r, 3), 2, 1].filter((n, k, a) => n <= r && a.indexOf(n) === k)) {
              const close = this.closing(i + r, c, len);
              if (close < 0 || close >= to || close === i + r) continue;
              flush();
              if (r > len) buf += c.repeat(r - len);
              flush();
              let node;
              if (c === '~') node = el('del');
              else if (len === 3) {
                node = el('strong');
                const em = el('em');
                node.appendChild(em);
                this.render(em, i + r, close, noLinks);
              } else node = el(len === 2 ? 'strong' : 'em');
              if (len !== 3) this.render(node, i + r, close, noLinks);
              parent.appendChild(node);
              i = close + len;
              done = true;
              break;
            }
            if (done) continue;
          }
          buf += s.slice(i, i + r);
          i += r;
          continue;
        }
        if ((c === '[' || (c === '!' && s[i + 1] === '[')) && !noLinks) {
          const img = c === '!';
          const lk = this.linkAt(img ? i + 1 : i);
          if (lk && lk.end <= to) {
            flush();
            const start = (img ? i + 1 : i) + 1;
            if (img) {
              // Images are never fetched: the page shows what the model
              // pointed at, as a link.
              const label = el('span', {class: 'img-ref'}, '\u{1F5BC} ' + (decodeEntities(lk.label) || 'image'));
              parent.appendChild(link(lk.dest, label, lk.title || lk.dest));
            } else {
              const label = document.createDocumentFragment();
              this.render(label, start, start + lk.label.length, true);
              parent.appendChild(link(lk.dest, label, lk.title));
            }
            i = lk.end;
            continue;
          }
        }
        if (c === '<') {
          const m = /^<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*)>/.exec(s.slice(i, Math.min(to, i + 2048)));
          if (m && !noLinks) {
            flush();
            parent.appendChild(link(m[1], m[1]));
            i += m[0].length;
            continue;
          }
        }
        if ((c === 'h' || c === 'w') && !noLinks && (i === 0 || !WORD.test(s[i - 1]))) {
          const m = /^(?:https?:\/\/|www\.)[^\s<]*/.exec(s.slice(i, Math.min(to, i + 4096)));
          if (m && m[0].length > 7) {
            let u = m[0].replace(/[?!.,:*_~'"]+$/, '');
            // A closing parenthesis belongs to the URL only when it opens one.
            while (u.endsWith(')') && (u.split('(').length < u.split(')').length)) u = u.slice(0, -1);
            flush();
            parent.appendChild(link(u.startsWith('www.') ? 'https://' + u : u, u));
            i += u.length;
            continue;
          }
        }
        if (c === '\n') {
          if (/ {2,}$/.test(buf)) {
            buf = buf.replace(/ +$/, '');
            flush();
            parent.appendChild(el('br'));
            i++;
            continue;
          }
        }
        buf += c;
        i++;
      }
      flush();
    }
  }

  function inline(parent, text, noLinks) {
    const p = new Inline(visible(text));
    p.render(parent, 0, p.src.length, noLinks);
    return parent;
  }

  // ---- rendering ----

  function langClass(lang) {
    const l = (lang || '').replace(/[^a-z0-9+#_-]/g, '').slice(0, 20);
    return l;
  }

  function codeBlock(text, lang, open) {
    const l = langClass(lang);
    const code = el('code', l ? {class: 'lang-' + l} : null);
    code.appendChild(dsh.hl.highlight(visible(text), l));
    const copy = el('button', {class: 'copy', type: 'button', title: 'Copy code', 'aria-label': 'Copy code'}, 'Copy');
    copy.addEventListener('click', () => {
      if (navigator.clipboard) {
        navigator.clipboard.writeText(text).then(() => {
          copy.textContent = 'Copied';
          setTimeout(() => (copy.textContent = 'Copy'), 1200);
        }, () => {});
      }
    });
    return el('div', {class: 'codeblock' + (open ? ' open' : '')},
      el('div', {class: 'code-head'}, el('span', {class: 'code-lang'}, l || 'text'), copy),
      el('pre', null, code));
  }

  function renderBlock(b, tight) {
    switch (b.t) {
      case 'p':
        return tight ? inline(document.createDocumentFragment(), b.text) : inline(el('p'), b.text);
      case 'h':
        return inline(el('h' + b.level), b.text);
      case 'hr':
        return el('hr');
      case 'code':
        return codeBlock(b.text, b.lang, b.open);
      case 'quote':
        return el('blockquote', null, b.children.map((c) => renderBlock(c, false)));
      case 'list': {
        const list = el(b.ordered ? 'ol' : 'ul', b.ordered && b.start !== 1 ? {start: b.start} : null);
        for (const it of b.items) {
          const li = el('li', it.task !== null ? {class: 'task'} : null);
          if (it.task !== null) {
            li.appendChild(el('input', {type: 'checkbox', disabled: true, checked: it.task, 'aria-label': it.task ? 'done' : 'not done'}));
          }
          for (const c of it.children) li.appendChild(renderBlock(c, !b.loose));
          list.appendChild(li);
        }
        return list;
      }
      case 'table': {
        const row = (cells, tag) => el('tr', null, cells.map((c, k) => inline(el(tag, b.align[k] ? {class: 'al-' + b.align[k]} : null), c)));
        return el('div', {class: 'table-wrap'}, el('table', null,
          el('thead', null, row(b.head, 'th')),
          b.rows.length ? el('tbody', null, b.rows.map((r) => row(r, 'td'))) : null));
      }
    }
    return document.createTextNode('');
  }

  function split(text) {
    return String(text).replace(/\r\n?/g, '\n').split('\n');
  }

  // render returns the Markdown text as a fragment.
  function render(text) {
    const frag = document.createDocumentFragment();
    if (text.length > MAX_SOURCE) {
      frag.appendChild(el('pre', {class: 'md-raw'}, visible(text)));
      return frag;
    }
    for (const b of parseBlocks(split(text), true)) frag.appendChild(renderBlock(b, false));
    return frag;
  }

  // into renders text into container, keeping the nodes of leading blocks
  // whose source is unchanged since the last call on that container: a
  // streamed answer re-renders only its growing tail.
  function into(container, text) {
    if (text.length > MAX_SOURCE) {
      container.__mdBlocks = null;
      dsh.dom.clear(container).appendChild(render(text));
      return;
    }
    const blocks = parseBlocks(split(text), true);
    const prev = container.__mdBlocks || [];
    let same = 0;
    while (same < prev.length && same < blocks.length && prev[same].src === blocks[same].src && prev[same].node.parentNode === container) same++;
    for (let k = prev.length - 1; k >= same; k--) {
      if (prev[k].node.parentNode === container) container.removeChild(prev[k].node);
    }
    if (same === 0) dsh.dom.clear(container);
    const kept = prev.slice(0, same);
    for (let k = same; k < blocks.length; k++) {
      const node = renderBlock(blocks[k], false);
      const wrap = node.nodeType === 11 ? el('span', null, node) : node;
      container.appendChild(wrap);
      kept.push({src: blocks[k].src, node: wrap});
    }
    container.__mdBlocks = kept;
  }

  dsh.md = {render, into, inline, parseBlocks: (t) => parseBlocks(split(t), true)};
})(dsh);
