// ansi.js — command output as text. Colours and bold (SGR) become spans of
// a fixed set of classes; every other escape (cursor moves, OSC titles,
// OSC 8 links, clipboard writes) is dropped; carriage returns keep the
// last rewrite of a line, backspaces erase; other control characters are
// shown as symbols. Nothing in the output can become markup or a link.
'use strict';
(function (dsh) {
  const {el, visible} = dsh.dom;

  const CUBE = [0, 95, 135, 175, 215, 255];
  // nearest maps an RGB colour to the closest of the 16 terminal colours.
  const BASE = [[0, 0, 0], [205, 49, 49], [13, 188, 121], [229, 229, 16], [36, 114, 200], [188, 63, 188], [17, 168, 205], [229, 229, 229],
    [102, 102, 102], [241, 76, 76], [35, 209, 139], [245, 245, 67], [59, 142, 234], [214, 112, 214], [41, 184, 219], [255, 255, 255]];
  function nearest(r, g, b) {
    let best = 0, bd = Infinity;
    BASE.forEach(([R, G, B], k) => {
      const d = (R - r) ** 2 + (G - g) ** 2 + (B - b) ** 2;
      if (d < bd) {
        bd = d;
        best = k;
      }
    });
    return best;
  }
  function color256(n) {
    if (n < 16) return n;
    if (n >= 232) {
      const v = 8 + (n - 232) * 10;
      return nearest(v, v, v);
    }
    n -= 16;
    return nearest(CUBE[Math.floor(n / 36)], CUBE[Math.floor(n / 6) % 6], CUBE[n % 6]);
  }

  function sgr(state, params) {
    const p = params === '' ? [0] : params.split(/[;:]/).map((x) => (x === '' ? 0 : parseInt(x, 10)));
    for (let k = 0; k < p.length; k++) {
      const n = p[k];
      if (n === 0) {
        state.fg = state.bg = -1;
        state.bold = state.dim = state.italic = state.under = false;
      } else if (n === 1) state.bold = true;
      else if (n === 2) state.dim = true;
      else if (n === 3) state.italic = true;
      else if (n === 4) state.under = true;
      else if (n === 22) state.bold = state.dim = false;
      else if (n === 23) state.italic = false;
      else if (n === 24) state.under = false;
      else if (n >= 30 && n <= 37) state.fg = n - 30;
      else if (n >= 90 && n <= 97) state.fg = n - 90 + 8;
      else if (n === 39) state.fg = -1;
      else if (n >= 40 && n <= 47) state.bg = n - 40;
      else if (n >= 100 && n <= 107) state.bg = n - 100 + 8;
      else if (n === 49) state.bg = -1;
      else if (n === 38 || n === 48) {
        let c = -1;
        if (p[k + 1] === 5) {
          c = color256(p[k + 2] || 0);
          k += 2;
        } else if (p[k + 1] === 2) {
          c = nearest(p[k + 2] || 0, p[k + 3] || 0, p[k + 4] || 0);
          k += 4;
        }
        if (n === 38) state.fg = c;
        else state.bg = c;
      }
    }
  }

  function classes(st) {
    const c = [];
    if (st.fg >= 0) c.push('ansi-fg' + st.fg);
    if (st.bg >= 0) c.push('ansi-bg' + st.bg);
    if (st.bold) c.push('ansi-b');
    if (st.dim) c.push('ansi-d');
    if (st.italic) c.push('ansi-i');
    if (st.under) c.push('ansi-u');
    return c.join(' ');
  }

  // lines applies carriage returns and backspaces the way a terminal shows
  // their result, line by line.
  function settle(text) {
    return text.replace(/\r\n/g, '\n').split('\n').map((line) => {
      if (line.indexOf('\r') >= 0) {
        const parts = line.split('\r');
        let cur = '';
        for (const part of parts) cur = part + cur.slice(part.length);
        line = cur;
      }
      if (line.indexOf('\b') >= 0) {
        let out = '';
        for (const ch of line) out = ch === '\b' ? out.slice(0, -1) : out + ch;
        line = out;
      }
      return line;
    }).join('\n');
  }

  // The escapes a terminal understands: CSI … final, OSC … BEL/ST, DCS/APC/
  // PM/SOS … ST, and two-character escapes.
  const reEsc = /\x1b\[([0-?]*)[ -/]*([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\|$)|\x1b[PX^_][^\x1b]*(?:\x1b\\|$)|\x1b[ -/]*[0-~]|\x9b[0-?]*[ -/]*[@-~]/g;

  // render returns output as a fragment.
  function render(text) {
    const frag = document.createDocumentFragment();
    const s = String(text);
    if (s.indexOf('\x1b') < 0 && s.indexOf('\x9b') < 0) {
      frag.appendChild(document.createTextNode(visible(settle(s))));
      return frag;
    }
    const st = {fg: -1, bg: -1, bold: false, dim: false, italic: false, under: false};
    let last = 0, m;
    const put = (chunk) => {
      if (!chunk) return;
      const t = visible(settle(chunk));
      const c = classes(st);
      frag.appendChild(c ? el('span', {class: c}, t) : document.createTextNode(t));
    };
    reEsc.lastIndex = 0;
    while ((m = reEsc.exec(s))) {
      put(s.slice(last, m.index));
      if (m[2] === 'm') sgr(st, m[1]);
      last = m.index + m[0].length;
    }
    put(s.slice(last));
    return frag;
  }

  // strip returns the text without escapes (for previews and copying).
  function strip(text) {
    return visible(settle(String(text).replace(reEsc, '')));
  }

  dsh.ansi = {render, strip};
})(dsh);
