// kubectl-drift dashboard: one page, no build step, no external requests. Every text from the
// API is put in the page with textContent (never as HTML). Filters, the tab and each tab's page
// number live in the URL.
'use strict';

const PAGE = 200;
// Lines of a long diff or value shown before "show all N lines".
const PREVIEW_LINES = 20;
// The URL parameter that keeps each tab's page number (1-based; absent on the first page).
const PAGE_PARAM = { orphans: 'opage', versions: 'vpage', releases: 'rpage' };
const state = { tab: 'orphans', releases: null, versions: null, orphans: null, status: null, history: null, selected: new Set(), pages: { orphans: 0, versions: 0, releases: 0 }, seen: {} };

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}
const $ = (id) => document.getElementById(id);

async function api(path, body) {
  const opts = body === undefined ? {} : { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) };
  const r = await fetch(path, opts);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = { error: text }; }
  if (!r.ok) throw new Error((data && data.error) || (r.status + ' ' + r.statusText));
  return data;
}

// ---------- URL state ----------
function params() { return new URLSearchParams(location.search); }
function setParam(k, v) {
  const p = params();
  if (v) p.set(k, v); else p.delete(k);
  history.replaceState(null, '', '?' + p.toString());
}
function setPage(tab, p) {
  state.pages[tab] = p;
  setParam(PAGE_PARAM[tab], p ? String(p + 1) : '');
}
function restorePages() {
  const p = params();
  for (const [tab, k] of Object.entries(PAGE_PARAM)) {
    const n = parseInt(p.get(k) || '1', 10);
    state.pages[tab] = Number.isFinite(n) && n > 0 ? n - 1 : 0;
  }
}
function restoreFilters() {
  const p = params();
  for (const e of document.querySelectorAll('[data-param]')) {
    const v = p.get(e.dataset.param);
    if (v !== null) {
      if (e.tagName === 'SELECT' && ![...e.options].some((o) => o.value === v)) e.append(el('option', { value: v }, v));
      e.value = v;
    }
  }
}

// ---------- tabs ----------
function showTab(tab, focus) {
  state.tab = tab;
  for (const b of document.querySelectorAll('[role=tab]')) {
    const on = b.dataset.tab === tab;
    b.setAttribute('aria-selected', on ? 'true' : 'false');
    b.tabIndex = on ? 0 : -1;
    if (on && focus) b.focus();
    $('panel-' + b.dataset.tab).hidden = !on;
  }
  setParam('tab', tab);
}
function setupTabs() {
  const tabs = [...document.querySelectorAll('[role=tab]')];
  tabs.forEach((b, i) => {
    b.addEventListener('click', () => showTab(b.dataset.tab));
    b.addEventListener('keydown', (ev) => {
      let j = null;
      if (ev.key === 'ArrowRight') j = (i + 1) % tabs.length;
      if (ev.key === 'ArrowLeft') j = (i + tabs.length - 1) % tabs.length;
      if (ev.key === 'Home') j = 0;
      if (ev.key === 'End') j = tabs.length - 1;
      if (j !== null) { ev.preventDefault(); showTab(tabs[j].dataset.tab, true); }
    });
  });
}

// ---------- header ----------
// Every time on the page is one format, ISO 8601 in UTC to the second (2026-12-05T01:36:27Z), as
// the tables and the API write it: never the browser's locale or time zone.
function utc(ms) {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}
function fmtTime(iso) {
  if (!iso) return 'never';
  return utc(Date.parse(iso));
}
// A time as text, with how long ago on hover.
function timeEl(iso) {
  const t = Date.parse(iso);
  return el('time', { datetime: utc(t), title: elapsed(Date.now() / 1000 - t / 1000) + ' ago' }, utc(t));
}
function renderStatus(s) {
  $('cluster').textContent = s.clusterName + (s.namespace ? ' · namespace ' + s.namespace : ' · all namespaces');
  const ul = $('scans');
  ul.replaceChildren();
  const running = [];
  for (const sc of s.scopes) {
    if (!sc.available) continue;
    const li = el('li', { 'data-scope': sc.scope }, el('b', {}, sc.scope), ' ', sc.scannedAt ? timeEl(sc.scannedAt) : 'not scanned yet');
    if (sc.fromDisk) li.append(el('span', { class: 'tag', title: 'read from the data directory at start' }, 'saved'));
    if (sc.lastError) li.append(el('span', { class: 'tag bad', title: sc.lastError }, 'last scan failed'));
    if (sc.live) li.append(el('span', { class: 'tag', title: 'kept current by watch streams between scans' }, 'live'));
    ul.append(li);
    if (sc.running) running.push(sc.scope + ' ' + (sc.running.percent != null ? sc.running.percent + '%' : Math.round(sc.running.elapsedSeconds) + ' s'));
  }
  $('progress').textContent = running.length ? 'scanning: ' + running.join(', ') : '';
  $('rescan').disabled = running.length > 0;
  document.body.dataset.scanning = running.length ? 'yes' : 'no';
}
async function poll() {
  try {
    const s = await api('api/status');
    state.status = s;
    renderStatus(s);
    for (const sc of s.scopes) {
      if (!sc.available) {
        $({ releases: 'rel-note', versions: 'ver-note', orphans: 'orph-note' }[sc.scope]).textContent = `The ${sc.scope} scan is not available in this server.`;
        continue;
      }
      const key = sc.scannedAt + '|' + sc.lastErrorAt;
      if (state.seen[sc.scope] !== key) { state.seen[sc.scope] = key; load(sc.scope); }
    }
    const busy = s.scopes.some((x) => x.running);
    setTimeout(poll, busy ? 1000 : 10000);
  } catch (e) {
    $('progress').textContent = 'server unreachable: ' + e.message;
    setTimeout(poll, 5000);
  }
}
async function load(scope) {
  const path = { releases: 'api/releases', versions: 'api/drift', orphans: 'api/orphans' }[scope];
  try {
    // The releases come with their drift history (each result is recorded before it is shown).
    const [d] = await Promise.all([api(path), scope === 'releases' ? loadHistory() : null]);
    state[scope] = d;
    ({ releases: renderReleases, versions: renderVersions, orphans: renderOrphans })[scope]();
  } catch (e) {
    $({ releases: 'rel-note', versions: 'ver-note', orphans: 'orph-note' }[scope]).textContent = e.message;
  }
}

// ---------- helpers ----------
function matches(q, ...fields) {
  if (!q) return true;
  q = q.toLowerCase();
  return fields.some((f) => f && String(f).toLowerCase().includes(q));
}
function fill(select, values) {
  const cur = select.value;
  const keep = [...select.options].filter((o) => o.value === '');
  select.replaceChildren(...keep, ...[...new Set(values)].filter((v) => v).sort().map((v) => el('option', { value: v }, v)));
  if ([...select.options].some((o) => o.value === cur)) select.value = cur;
}
function age(s) {
  if (s == null) return '?';
  if (s < 60) return s + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm';
  if (s < 86400) return Math.floor(s / 3600) + 'h';
  return Math.floor(s / 86400) + 'd';
}
function pager(id, total, page, onPage) {
  const box = $(id);
  box.replaceChildren();
  const pages = Math.max(1, Math.ceil(total / PAGE));
  if (pages <= 1) { box.append(`${total} row(s)`); return; }
  box.append(
    el('button', { type: 'button', disabled: page === 0, onclick: () => onPage(page - 1) }, '‹ Previous'),
    ` page ${page + 1} of ${pages} (${total} rows) `,
    el('button', { type: 'button', disabled: page >= pages - 1, onclick: () => onPage(page + 1) }, 'Next ›'),
  );
}
function scanNote(id, d, scope) {
  const n = $(id);
  if (!d) { n.textContent = ''; return; }
  const sc = d.scan;
  if (!sc.available) n.textContent = `The ${scope} scope is not available in this server.`;
  else if (!d.report) n.textContent = sc.running ? 'The first scan is running…' : (sc.lastError ? 'Scan failed: ' + sc.lastError : 'No scan yet.');
  else n.textContent = sc.lastError ? 'The last scan failed (' + sc.lastError + '); showing the one before.' : '';
}

// ---------- config drift ----------
const STATUS_ORDER = { error: 0, drifted: 1, incomplete: 2, clean: 3 };
function value(v) {
  if (v === null || v === undefined) return '—';
  return typeof v === 'string' ? v : JSON.stringify(v);
}
// Lines in a <pre>, the first PREVIEW_LINES shown and the rest behind "show all N lines".
// `line` makes one line's element.
function collapsible(cls, lines, line) {
  const pre = el('pre', { class: cls });
  const fill = (all) => pre.replaceChildren(...(all ? lines : lines.slice(0, PREVIEW_LINES)).map(line));
  fill(false);
  if (lines.length <= PREVIEW_LINES) return pre;
  const toggle = el('button', { type: 'button', class: 'more', 'aria-expanded': 'false' }, `show all ${lines.length} lines`);
  toggle.addEventListener('click', () => {
    const all = toggle.getAttribute('aria-expanded') !== 'true';
    fill(all);
    toggle.setAttribute('aria-expanded', all ? 'true' : 'false');
    toggle.textContent = all ? `show the first ${PREVIEW_LINES} lines` : `show all ${lines.length} lines`;
  });
  return el('div', {}, pre, toggle);
}
// A desired or live value: multi-line strings as lines (long ones collapsed), the rest as text.
function valueCell(cls, v) {
  if (typeof v === 'string' && v.includes('\n')) {
    const lines = v.replace(/\n$/, '').split('\n');
    return el('td', { class: cls }, collapsible('value', lines, (t) => el('span', { class: 'line' }, t)));
  }
  return el('td', { class: cls }, value(v));
}
// The line diff the CLI prints for a multi-line value (`diff` from the API: removed lines in the
// desired colour, added lines in the live colour, headers dim), across the Desired and Live columns.
function diffCell(diff) {
  return el('td', { class: 'diff', colspan: '2' },
    collapsible('diff', diff, (l) => el('span', { class: 'line d-' + l.kind, 'data-kind': l.kind }, l.text)));
}
function renderReleases() {
  const d = state.releases;
  scanNote('rel-note', d, 'releases');
  const list = $('rel-list');
  // A new render (a scan, the history, a filter) keeps the releases the user opened open.
  const opened = new Set([...list.querySelectorAll('details.release[open]')].map((x) => x.dataset.release));
  list.replaceChildren();
  historyNote();
  if (!d || !d.report) { $('rel-pager').textContent = ''; return; }
  const now = Date.now() / 1000;
  const status = $('rel-status').value;
  const q = $('rel-q').value.trim();
  // Flux Kustomizations and Argo CD Applications checked with the releases: shown like them.
  const targets = (d.report.gitops || []).map((f) => ({ ...f, name: f.path, namespace: f.type, target: true }));
  const rels = d.report.releases.concat(targets)
    .filter((r) => !status || r.status === status)
    .filter((r) => matches(q, r.name, r.namespace, r.chart, ...r.objects.flatMap((o) => [o.name, o.kind, ...o.fields.map((f) => f.path)])))
    .sort((a, b) => STATUS_ORDER[a.status] - STATUS_ORDER[b.status] || a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
  $('count-releases').textContent = d.report.summary.drifted ? `(${d.report.summary.drifted})` : '';
  if (!rels.length) list.append(el('p', { class: 'empty' }, d.report.releases.length ? 'No release matches the filters.' : 'No Helm release found.'));
  // One <details> per release, 200 a page like the other tabs' rows.
  const page = Math.min(state.pages.releases, Math.max(0, Math.ceil(rels.length / PAGE) - 1));
  pager('rel-pager', rels.length, page, (p) => { setPage('releases', p); renderReleases(); });
  for (const r of rels.slice(page * PAGE, (page + 1) * PAGE)) {
    const objs = r.objects;
    // This target's findings in the history (a release, or a GitOps target by its NAMESPACE/NAME).
    const hist = historyOf(r.target ? `${r.type}|${r.name}` : `release|${r.namespace}/${r.name}`);
    const det = el('details', { class: 'release', 'data-release': r.namespace + '/' + r.name, open: opened.has(r.namespace + '/' + r.name) },
      el('summary', {},
        el('span', { class: 'badge s-' + r.status }, r.status), ' ',
        el('b', {}, r.name), ' ', el('span', { class: 'dim' }, r.namespace), ' ',
        el('span', { class: 'dim' }, r.target ? (r.gitops ? `${r.gitops.kind}` : '') : `${r.chart}-${r.chartVersion} rev ${r.revision}`), ' ',
        objs.length ? el('span', {}, `${objs.length} object(s)`) : null,
        // The strip on a line of its own, the page's width: at 240 pixels an hour of a 30-day
        // window was a third of a pixel.
        hist ? strip(hist, now) : null));
    if (hist) det.append(intervalsNote(hist, now));
    if (r.error) det.append(el('p', { class: 'error' }, r.error));
    // The same release in another namespace: the command that compares the two (docs/compare.md).
    if (!r.target) {
      for (const other of d.report.releases.filter((x) => x.name === r.name && x.namespace !== r.namespace)) {
        det.append(el('p', { class: 'dim compare-with', 'data-namespace': other.namespace }, `Compare with ${other.namespace}: `,
          el('code', {}, `kubectl drift compare ${r.name} -n ${r.namespace},${other.namespace}`)));
      }
    }
    if (r.helmDescription) det.append(el('p', { class: 'dim' }, 'Helm: ' + r.helmDescription));
    if (r.gitops) {
      const g = r.gitops;
      const conds = (g.conditions || []).map((c) => `${c.type}=${c.status}` + (c.reason ? ` (${c.reason})` : '')).join(', ');
      det.append(el('p', { class: 'dim gitops' }, `${g.controller}: ${g.kind} ${g.namespace}/${g.name}` +
        (g.driftDetection ? ` · drift detection ${g.driftDetection}` : '') + (conds ? ` · ${conds}` : '')),
        el('p', { class: 'dim' }, 'Next: ' + g.next));
    }
    for (const o of objs) {
      const finding = (path) => hist && hist.findings.get(`${o.kind}|${o.namespace || ''}|${o.name}|${path}`);
      // A whole object missing or extra is one finding without a path: its "since" beside it.
      const whole = o.fields.length ? null : finding('');
      const box = el('div', { class: 'object' }, el('h3', {}, el('span', { class: 'badge o-' + o.state }, o.notCreated ? 'not created (the install failed)' : o.state), ' ', `${o.kind} ${o.namespace ? o.namespace + '/' : ''}${o.name}`,
        whole && !whole.resolvedAt ? el('span', { class: 'since' }, ' ' + sinceText(whole, now)) : null));
      if (o.error) box.append(el('p', { class: 'error' }, o.error));
      if (o.fields.length) {
        const t = el('table', { class: 'fields' }, el('thead', {}, el('tr', {}, el('th', {}, 'Field'), el('th', {}, 'Change'), el('th', {}, 'Desired'), el('th', {}, 'Live'), el('th', {}, 'Changed by'),
          hist ? el('th', {}, 'Drifted') : null)));
        const tb = el('tbody');
        for (const f of o.fields) {
          const h = f.reason ? null : finding(f.path);
          tb.append(el('tr', { class: f.reason ? 'ignored' : '', 'data-path': f.path },
            el('td', { class: 'path' }, f.path),
            el('td', {}, f.change + (f.reason ? ' (ignored: ' + f.reason + ')' : '') + (f.fromRevision ? ` (from revision ${f.fromRevision})` : '')),
            f.diff ? diffCell(f.diff) : [valueCell('desired', f.desired), valueCell('live', f.live)],
            el('td', {}, (f.manager || '') + (f.time ? ' ' + f.time : '')),
            hist ? el('td', { class: 'since' }, h && !h.resolvedAt ? sinceText(h, now) : '') : null));
        }
        t.append(tb);
        box.append(t);
      }
      det.append(box);
    }
    if (r.reconcile && r.reconcile.length) {
      det.append(el('h3', {}, 'Reconcile'), el('pre', { class: 'commands' }, r.reconcile.join('\n')));
    }
    list.append(det);
  }
}

// ---------- drift history ----------
// Each release's drifted intervals over a window (a strip), and beside each drifted field since
// when, how many episodes and by whom, from GET api/history (the server's --history). The window
// is the last 30 days by default (the whole retention when it is shorter), in the URL as `hwin`.
const WINDOWS = [['1h', 3600], ['1d', 86400], ['7d', 7 * 86400], ['30d', 30 * 86400]];
const DEFAULT_WINDOW = '30d';
// [name, seconds] of the chosen window; 'all' is everything the server keeps.
function historyWindow() {
  const h = state.status && state.status.history;
  const keep = h ? h.retentionSeconds : 0;
  const choices = WINDOWS.filter(([, secs]) => secs < keep).concat([['all', keep]]);
  const sel = $('rel-window');
  const want = sel.value || params().get('hwin') || DEFAULT_WINDOW;
  if (sel.dataset.keep !== String(keep)) {
    sel.dataset.keep = String(keep);
    sel.replaceChildren(...choices.map(([name, secs]) => el('option', { value: name },
      name === 'all' ? `all kept (${duration(secs)})` : `last ${duration(secs)}`)));
  }
  const chosen = choices.find(([name]) => name === want) || choices.find(([name]) => name === DEFAULT_WINDOW) || choices[choices.length - 1];
  sel.value = chosen[0];
  return chosen;
}
// How long something lasted, as the CLI writes it: 45s, 12m, 5h 3m, 3d 4h.
function elapsed(s) {
  s = Math.max(0, Math.floor(s));
  if (s < 60) return s + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm';
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}
// A window's length in words: 1 hour, 7 days.
function duration(secs) {
  if (secs % 86400 === 0) return secs === 86400 ? '1 day' : `${secs / 86400} days`;
  if (secs % 3600 === 0) return secs === 3600 ? '1 hour' : `${secs / 3600} hours`;
  return elapsed(secs);
}
const unix = (iso) => Date.parse(iso) / 1000;
async function loadHistory() {
  const st = state.status;
  if (!st) return;
  if (!st.history) { state.history = { off: true }; return; }
  const [name, secs] = historyWindow();
  const q = new URLSearchParams({ cluster: st.clusterName });
  if (name !== 'all') q.set('since', name);
  try {
    const d = await api('api/history?' + q.toString());
    // Target -> its findings by object and path.
    const targets = new Map();
    for (const e of d.entries) {
      const t = e.target;
      const key = `${t.kind}|${t.namespace ? t.namespace + '/' : ''}${t.name}`;
      if (!targets.has(key)) targets.set(key, { entries: [], findings: new Map() });
      const x = targets.get(key);
      x.entries.push(e);
      x.findings.set(`${e.object.kind}|${e.object.namespace || ''}|${e.object.name}|${e.path}`, e);
    }
    state.history = { targets, name, secs };
  } catch (e) {
    state.history = { error: e.message };
  }
}
function historyNote() {
  const h = state.history;
  const n = $('rel-history');
  for (const e of [$('rel-window').parentElement, $('rel-history-csv')]) e.hidden = !!(h && h.off);
  if (!h) n.textContent = '';
  else if (h.off) n.textContent = 'No drift history is kept (serve --history off): the strips and "drifted since" need one.';
  else if (h.error) n.textContent = 'The drift history could not be read: ' + h.error;
  else n.textContent = `Strips: when each release drifted over the ${h.name === 'all' ? 'whole history kept' : 'last ' + duration(h.secs)} (drift by hand; now at the right).`;
}
// The history of one target, or null when no history is shown (an empty one when it has none).
function historyOf(key) {
  const h = state.history;
  if (!h || !h.targets) return null;
  const x = h.targets.get(key) || { entries: [], findings: new Map() };
  return { ...x, secs: h.secs, name: h.name };
}
// The drifted intervals of a target's findings in the window, overlapping ones merged (one that
// starts in the second another ended is another episode: kept apart): [[start, end, open]] in
// Unix seconds, oldest first.
function drifted(hist, now) {
  const from = now - hist.secs;
  const ivs = hist.entries.flatMap((e) => (e.intervals || []).map((i) => [unix(i.start), i.end ? unix(i.end) : now, !i.end]))
    .filter(([, end]) => end >= from).sort((a, b) => a[0] - b[0]);
  const merged = [];
  for (const [s, e, open] of ivs) {
    const last = merged[merged.length - 1];
    if (last && s < last[1]) { last[1] = Math.max(last[1], e); last[2] = last[2] || open; } else merged.push([Math.max(s, from), e, open]);
  }
  return merged;
}
function span(s, e, open) {
  return `${utc(s * 1000)} to ${open ? 'now' : utc(e * 1000)} (${elapsed(e - s)})`;
}
function strip(hist, now) {
  const ivs = drifted(hist, now);
  const window = hist.name === 'all' ? 'in the history kept' : `in the last ${duration(hist.secs)}`;
  const label = ivs.length ? `drifted ${ivs.length} time(s) ${window}` : `no drift ${window}`;
  const bar = el('span', { class: 'strip', role: 'img', 'aria-label': label, title: label, 'data-intervals': String(ivs.length) });
  for (const [s, e, open] of ivs) {
    const seg = el('span', { class: 'seg' + (open ? ' open' : ''), title: span(s, e, open),
      'data-start': utc(s * 1000), 'data-end': open ? '' : utc(e * 1000) });
    // Placed from the right (now), so that an interval too short to see keeps its minimum width
    // inside the strip; by CSSOM (the page's Content-Security-Policy allows no style attributes).
    seg.style.right = (100 * (now - e) / hist.secs).toFixed(3) + '%';
    seg.style.width = (100 * (e - s) / hist.secs).toFixed(3) + '%';
    bar.append(seg);
  }
  return bar;
}
function intervalsNote(hist, now) {
  const ivs = drifted(hist, now);
  const window = hist.name === 'all' ? 'in the history kept' : `in the last ${duration(hist.secs)}`;
  if (!ivs.length) return el('p', { class: 'dim history' }, `No drift ${window}.`);
  // Each episode on a line of its own, newest first: two a few seconds apart are one mark on the
  // strip at a 30-day window, and two lines here.
  return el('div', { class: 'history' },
    el('p', { class: 'dim history' }, `Drifted ${ivs.length} time(s) ${window}, newest first:`),
    el('ol', { class: 'episodes' }, ivs.slice().reverse().map(([s, e, open]) =>
      el('li', { 'data-start': utc(s * 1000), 'data-end': open ? '' : utc(e * 1000) }, span(s, e, open)))));
}
// "since 3d 4h, 2 episodes, by kubectl-edit" for an open finding: since its current episode.
function sinceText(e, now) {
  const current = (e.intervals || []).filter((i) => !i.end).pop();
  const since = current ? unix(current.start) : unix(e.firstSeen);
  const by = e.managers.length ? ', by ' + e.managers.join(', ') : '';
  return `since ${elapsed(now - since)}, ${e.episodes} episode${e.episodes === 1 ? '' : 's'}${by}`;
}

// ---------- versions ----------
function renderVersions() {
  const d = state.versions;
  scanNote('ver-note', d, 'versions');
  const tb = $('ver-table').tBodies[0];
  tb.replaceChildren();
  $('ver-left-out').textContent = '';
  if (!d || !d.report) { $('ver-pager').textContent = ''; return; }
  const rows = d.report.rows || [];
  // -n leaves the cluster-wide categories out (as the CLI's summary says).
  const left = (d.report.summary && d.report.summary.leftOut) || [];
  if (left.length) $('ver-left-out').textContent = `${left.join(' and ')} left out: this server is scoped to one namespace (-n); a server without -n scans them.`;
  fill($('ver-category'), rows.map((r) => r.category));
  fill($('ver-ns'), rows.map((r) => r.namespace));
  fill($('ver-status'), rows.map((r) => r.status));
  const cat = $('ver-category').value, ns = $('ver-ns').value, st = $('ver-status').value, q = $('ver-q').value.trim();
  const shown = rows.filter((r) => (!cat || r.category === cat) && (!ns || r.namespace === ns) && (!st || r.status === st) && matches(q, r.name, r.component, r.image, r.installed, r.latest, r.namespace));
  const outdated = rows.filter((r) => r.status !== 'current' && r.status !== 'unknown').length;
  $('count-versions').textContent = outdated ? `(${outdated})` : '';
  const page = Math.min(state.pages.versions, Math.max(0, Math.ceil(shown.length / PAGE) - 1));
  for (const r of shown.slice(page * PAGE, (page + 1) * PAGE)) {
    tb.append(el('tr', {},
      el('td', {}, el('span', { class: 'badge v-' + r.status }, r.status)),
      el('td', {}, r.category), el('td', {}, r.namespace || ''),
      el('td', {}, r.name + (r.component ? ' / ' + r.component : ''), r.image ? el('div', { class: 'dim' }, r.image) : null),
      el('td', {}, r.probed ? `${r.installed} (app ${r.probed})` : r.installed), el('td', {}, r.latest || ''), el('td', {}, r.why || r.ignored || ''),
      el('td', {}, r.notes && /^https?:\/\//.test(r.notes) ? el('a', { href: r.notes, rel: 'noopener noreferrer', target: '_blank' }, 'release notes') : '')));
  }
  pager('ver-pager', shown.length, page, (p) => { setPage('versions', p); renderVersions(); });
}

// ---------- orphans ----------
function orphanRows() {
  const d = state.orphans;
  if (!d || !d.report) return [];
  const cls = $('orph-class').value, kind = $('orph-kind').value, ns = $('orph-ns').value, q = $('orph-q').value.trim();
  return d.report.items.filter((i) => (!cls || i.class === cls) && (!kind || i.kind === kind) && (!ns || i.namespace === ns)
    && matches(q, i.name, i.namespace, i.kind, ...i.reasons, ...i.usedBy));
}
function renderOrphans() {
  const d = state.orphans;
  scanNote('orph-note', d, 'orphans');
  const tb = $('orph-table').tBodies[0];
  tb.replaceChildren();
  if (!d || !d.report) { $('orph-pager').textContent = ''; $('orph-scope').textContent = ''; return; }
  const items = d.report.items;
  fill($('orph-kind'), items.map((i) => i.kind));
  fill($('orph-ns'), items.map((i) => i.namespace));
  const known = new Set(items.map((i) => i.id));
  for (const id of [...state.selected]) if (!known.has(id)) state.selected.delete(id);
  const rows = orphanRows();
  $('count-orphans').textContent = d.report.summary.orphan ? `(${d.report.summary.orphan})` : '';
  // What the count counts (the scope, as the CLI command that counts the same), beside it: the
  // dashboard scans every namespace and the cluster-scoped kinds, the CLI without -A one namespace.
  const scope = (d.report.countScope && d.report.countScope.note) || '';
  $('count-orphans').title = scope;
  $('orph-scope').textContent = scope;
  const page = Math.min(state.pages.orphans, Math.max(0, Math.ceil(rows.length / PAGE) - 1));
  const frag = document.createDocumentFragment();
  for (const i of rows.slice(page * PAGE, (page + 1) * PAGE)) {
    const box = el('input', { type: 'checkbox', 'aria-label': 'select ' + i.id, checked: state.selected.has(i.id) });
    box.addEventListener('change', () => { box.checked ? state.selected.add(i.id) : state.selected.delete(i.id); selectionChanged(); });
    frag.append(el('tr', { 'data-id': i.id },
      el('td', {}, box),
      el('td', {}, el('span', { class: 'badge c-' + i.class }, i.class)),
      el('td', {}, i.kind), el('td', {}, i.namespace || ''), el('td', {}, i.name), el('td', {}, age(i.ageSeconds)),
      el('td', {}, i.reasons.join('; ')), el('td', {}, i.usedBy.join(', '))));
  }
  tb.append(frag);
  if (d.report.summary.skippedKinds && d.report.summary.skippedKinds.length) {
    $('orph-note').textContent = 'Incomplete: ' + d.report.summary.skippedKinds.map((k) => k.resource + ' (' + k.reason + ')').join(', ') + ' were not read; what they could reference is ignored, not orphan.';
  }
  pager('orph-pager', rows.length, page, (p) => { setPage('orphans', p); renderOrphans(); });
  selectionChanged();
}
function selectionChanged() {
  const n = state.selected.size;
  $('orph-selected').textContent = n + ' selected';
  for (const id of ['orph-ignore', 'orph-export', 'orph-delete']) $(id).disabled = n === 0;
  const boxes = [...$('orph-table').tBodies[0].querySelectorAll('input[type=checkbox]')];
  $('orph-all').checked = boxes.length > 0 && boxes.every((b) => b.checked);
}
function selectedItems() {
  const by = new Map(state.orphans.report.items.map((i) => [i.id, i]));
  return [...state.selected].map((id) => by.get(id)).filter(Boolean);
}
function plural(kind) { return kind.endsWith('s') ? kind + 'es' : kind.endsWith('y') ? kind.slice(0, -1) + 'ies' : kind + 's'; }

// Rules offered for a selection: the findings themselves, then rules that also cover future ones.
function ruleOptions(items) {
  const opts = [{ label: items.length === 1 ? `Only ${items[0].id}` : `Only these ${items.length} findings`, ids: items.map((i) => i.id) }];
  const seen = new Set();
  const add = (rule, label) => { if (!seen.has(rule)) { seen.add(rule); opts.push({ rule, label }); } };
  for (const i of items) {
    for (const s of i.sources || []) {
      if (s.startsWith('manager:')) add(`kind=${i.kind},source=${s}`, `${plural(i.kind)} written by ${s.slice(8)}`);
      else if (s.startsWith('helm:')) add(`kind=${i.kind},source=${s}`, `${plural(i.kind)} of Helm release ${s.slice(5)}`);
      else if (s.startsWith('managed-by:')) add(`kind=${i.kind},source=${s}`, `${plural(i.kind)} managed by ${s.slice(11)}`);
    }
  }
  for (const i of items) if (i.namespace) add(`kind=${i.kind},namespace=${i.namespace}`, `${plural(i.kind)} in ${i.namespace}`);
  for (const i of items) add(`kind=${i.kind}`, `All ${plural(i.kind)}`);
  return opts.slice(0, 12);
}
function openIgnore() {
  const items = selectedItems();
  const box = $('ignore-options');
  box.replaceChildren(el('legend', {}, `${items.length} selected`));
  $('ignore-error').textContent = '';
  ruleOptions(items).forEach((o, n) => {
    const count = el('span', { class: 'matches' }, o.ids ? `(${o.ids.length})` : '(…)');
    const radio = el('input', { type: 'radio', name: 'ignore-choice', value: String(n), checked: n === 0 });
    radio._option = o;
    box.append(el('label', { class: 'option' }, radio, ' ', o.label, ' ', count, o.rule ? el('code', {}, o.rule) : null));
    if (o.rule) api('api/orphans/rules', { rule: o.rule, dryRun: true }).then((r) => { count.textContent = `(${r.matches})`; }).catch((e) => { count.textContent = '(' + e.message + ')'; });
  });
  $('ignore-dialog').showModal();
  box.querySelector('input').focus();
}
async function submitIgnore(ev) {
  ev.preventDefault();
  const chosen = document.querySelector('input[name=ignore-choice]:checked');
  if (!chosen) return;
  const o = chosen._option, note = $('ignore-note').value;
  try {
    if (o.ids) await api('api/orphans/ignore', { ids: o.ids, note });
    else await api('api/orphans/rules', { rule: o.rule, note });
    $('ignore-dialog').close();
    state.selected.clear();
    $('ignore-note').value = '';
    await load('orphans');
  } catch (e) {
    $('ignore-error').textContent = e.message;
  }
}
async function script(action) {
  try {
    const r = await api('api/orphans/commands', { ids: [...state.selected], action });
    $('script-title').textContent = action === 'delete' ? 'Delete script' : 'Export script';
    $('script-text').value = r.script;
    $('script-skipped').replaceChildren(...r.skipped.map((s) => el('li', {}, `skipped ${s.id}: ${s.reason}`)));
    $('script-dialog').showModal();
    $('script-text').focus();
  } catch (e) {
    $('orph-note').textContent = e.message;
  }
}
async function copyScript() {
  const t = $('script-text');
  t.select();
  try { await navigator.clipboard.writeText(t.value); $('script-copy').textContent = 'Copied'; }
  catch (e) { document.execCommand && document.execCommand('copy'); $('script-copy').textContent = 'Copied (selection)'; }
  setTimeout(() => { $('script-copy').textContent = 'Copy'; }, 1500);
}
async function openRules() {
  const body = $('rules-body');
  body.replaceChildren('Loading…');
  $('rules-dialog').showModal();
  try {
    const r = await api('api/orphans/rules');
    body.replaceChildren();
    body.append(el('h3', {}, 'Dashboard rules'));
    if (!r.rules.length) body.append(el('p', { class: 'dim' }, 'none'));
    for (const x of r.rules) {
      body.append(el('div', { class: 'rule' }, el('code', {}, x.rule), ` ${x.note} (${x.matches} match) `,
        el('button', { type: 'button', onclick: async () => { await api('api/orphans/rules/delete', { id: x.id }); await load('orphans'); openRules(); } }, 'Delete ' + x.id)));
    }
    body.append(el('h3', {}, 'Ignored findings'));
    if (!r.ignores.length) body.append(el('p', { class: 'dim' }, 'none'));
    for (const x of r.ignores) {
      body.append(el('div', { class: 'rule' }, el('code', {}, x.id), ` ${x.note} `,
        el('button', { type: 'button', onclick: async () => { await api('api/orphans/unignore', { ids: [x.id] }); await load('orphans'); openRules(); } }, 'Unignore')));
    }
    body.append(el('h3', {}, 'From the config file (read-only)'));
    if (!r.configRules.length) body.append(el('p', { class: 'dim' }, 'none'));
    for (const x of r.configRules) body.append(el('div', { class: 'rule' }, el('b', {}, x.list), ' ', x.description));
  } catch (e) {
    body.replaceChildren(el('p', { class: 'error' }, e.message));
  }
}

// ---------- wiring ----------
function setup() {
  setupTabs();
  restoreFilters();
  restorePages();
  const p = params();
  const rerender = { rel: renderReleases, ver: renderVersions, orph: renderOrphans };
  const tabOf = { rel: 'releases', ver: 'versions', orph: 'orphans' };
  for (const e of document.querySelectorAll('[data-param]')) {
    const which = e.id.split('-')[0];
    // A new filter starts at its tab's first page.
    const h = () => { setParam(e.dataset.param, e.value); setPage(tabOf[which], 0); rerender[which](); };
    e.addEventListener(e.tagName === 'INPUT' ? 'input' : 'change', h);
  }
  $('orph-all').addEventListener('change', (ev) => {
    for (const b of $('orph-table').tBodies[0].querySelectorAll('tr')) {
      if (ev.target.checked) state.selected.add(b.dataset.id); else state.selected.delete(b.dataset.id);
    }
    renderOrphans();
  });
  $('orph-ignore').addEventListener('click', openIgnore);
  $('orph-export').addEventListener('click', () => script('export'));
  $('orph-delete').addEventListener('click', () => script('delete'));
  $('orph-rules').addEventListener('click', openRules);
  $('ignore-form').addEventListener('submit', submitIgnore);
  $('ignore-cancel').addEventListener('click', () => $('ignore-dialog').close());
  $('script-copy').addEventListener('click', copyScript);
  $('script-close').addEventListener('click', () => $('script-dialog').close());
  $('rules-close').addEventListener('click', () => $('rules-dialog').close());
  // Another history window: the history again for it.
  $('rel-window').addEventListener('change', async () => { await loadHistory(); renderReleases(); });
  $('rescan').addEventListener('click', async () => {
    try {
      $('rescan').disabled = true;
      const r = await api('api/rescan', {});
      $('progress').textContent = 'started: ' + (r.started.join(', ') || 'none') + (r.alreadyRunning.length ? '; already running: ' + r.alreadyRunning.join(', ') : '');
      setTimeout(poll, 300);
    } catch (e) {
      $('progress').textContent = e.message;
      $('rescan').disabled = false;
    }
  });
  const tab = p.get('tab');
  showTab(['releases', 'versions', 'orphans'].includes(tab) ? tab : 'releases');
  poll();
  listen();
}
document.addEventListener('DOMContentLoaded', setup);

// ---------- live updates ----------
// The server announces each changed result on /api/events (Server-Sent Events; with serve --live
// releases change within seconds of an edit). The page then fetches that scope again; polling
// stays as the fallback. EventSource reconnects by itself.
function listen() {
  if (!window.EventSource) return;
  const es = new EventSource('api/events');
  es.addEventListener('update', async (ev) => {
    let d = null;
    try { d = JSON.parse(ev.data); } catch (e) { return; }
    try {
      const s = await api('api/status');
      state.status = s;
      renderStatus(s);
      for (const sc of s.scopes) {
        if (!sc.available || (d.scope && d.scope !== sc.scope)) continue;
        state.seen[sc.scope] = sc.scannedAt + '|' + sc.lastErrorAt;
        load(sc.scope);
      }
    } catch (e) {
      $('progress').textContent = 'server unreachable: ' + e.message;
    }
  });
}
