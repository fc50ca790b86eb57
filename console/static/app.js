// Joinery console: a read-only page over the admin endpoint's JSON routes.
// Plain JavaScript, no dependencies. Data is put into the page with
// textContent only (never innerHTML), so keys and rows cannot inject markup.
'use strict';

const POLL_MS = 2000;
const MIN_I64 = -9.2e18; // math.MinInt64 as a JSON number: "none yet"
const MAX_I64 = 9.2e18;

const $ = (sel) => document.querySelector(sel);
const st = {
  job: localStorage.getItem('joinery.job') || '',
  token: sessionStorage.getItem('joinery.token') || '',
  samples: null,
  timer: null,
  page: '',
};

// el builds an element: el('td', {class: 'x', title: 't'}, 'text', child...).
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'onclick') e.addEventListener('click', v);
    else e.setAttribute(k, v);
  }
  for (const k of kids.flat()) {
    if (k === undefined || k === null) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}
function svg(tag, attrs) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}
function fill(node, ...kids) { node.replaceChildren(...kids.flat().filter((k) => k !== null && k !== undefined)); }

// Big is an integer JSON number beyond 2^53 (a Redis stream offset, an
// int64 bound), kept as its exact source text. valueOf makes comparisons
// work; toString shows it exactly.
class Big {
  constructor(s) { this.s = s; }
  toString() { return this.s; }
  valueOf() { return Number(this.s); }
}
// parseJSON keeps big integers exact where the browser gives revivers the
// source text (JSON.parse source text access); elsewhere they round.
function parseJSON(text) {
  return JSON.parse(text, function (k, v, ctx) {
    if (typeof v === 'number' && !Number.isSafeInteger(v) && ctx && /^-?\d+$/.test(ctx.source)) return new Big(ctx.source);
    return v;
  });
}
// prettyJSON indents a parsed value, writing Bigs back as bare numbers.
function prettyJSON(v) {
  return JSON.stringify(v, (k, x) => (x instanceof Big ? '\u0000' + x.s + '\u0000' : x), 2)
    .replace(/"\\u0000(-?\d+)\\u0000"/g, '$1');
}

class ApiError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}

// api fetches a path relative to the console (../v1/... is the admin API,
// api/samples the console's own data), with the bearer token when one was
// typed in (kept in this tab's sessionStorage). With tokens set on the node
// both need the read or the admin token; only the page itself is open.
async function api(path, asText) {
  const headers = {};
  if (st.token) headers.Authorization = 'Bearer ' + st.token;
  const r = await fetch(path, { headers, cache: 'no-store' });
  const body = await r.text();
  if (asText) return { status: r.status, text: body.trim() };
  if (!r.ok) {
    let msg = body.trim();
    try { msg = parseJSON(body).error || msg; } catch (e) { /* not JSON */ }
    if (r.status === 401) msg += ' (type the read or admin token in the token box)';
    if (r.status === 403) msg += ' (the console needs the read or admin token)';
    throw new ApiError(r.status, msg);
  }
  return body ? parseJSON(body) : null;
}
const jobPath = (job) => '../v1/jobs/' + encodeURIComponent(job);

function showError(msg) {
  const e = $('#error');
  e.hidden = !msg;
  e.textContent = msg || '';
}

// ---- formatting ----
function fmtNum(v, digits) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  const d = digits === undefined ? (Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2) : digits;
  return v.toLocaleString('en-US', { maximumFractionDigits: d });
}
function fmtDuration(ns) {
  if (!ns) return '–';
  let s = Math.floor(ns / 1e9);
  const d = Math.floor(s / 86400); s -= d * 86400;
  const h = Math.floor(s / 3600); s -= h * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  if (d) return d + 'd ' + h + 'h';
  if (h) return h + 'h ' + m + 'm';
  if (m) return m + 'm ' + s + 's';
  return s + 's';
}
function fmtMs(ms) {
  if (ms === null || ms === undefined) return '–';
  if (ms >= MAX_I64) return '∞ (no watermark yet)';
  const a = Math.abs(ms);
  if (a < 1000) return ms + ' ms';
  if (a < 60000) return fmtNum(ms / 1000, 1) + ' s';
  if (a < 3600000) return fmtNum(ms / 60000, 1) + ' min';
  return fmtNum(ms / 3600000, 1) + ' h';
}
function fmtTs(ms) {
  if (ms === null || ms === undefined || ms <= MIN_I64) return 'none yet';
  if (ms >= MAX_I64) return 'end of time';
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return String(ms);
  return d.toISOString().replace('T', ' ').replace('Z', ' UTC');
}
function pill(text, kind) { return el('span', { class: 'pill ' + kind }, text); }

// ---- routing ----
function route() {
  const h = location.hash.replace(/^#/, '');
  const m = h.match(/^\/jobs\/([^/]+)\/keys\/(.+)$/);
  clearTimeout(st.timer);
  if (m) {
    setJob(decodeURIComponent(m[1]));
    const key = decodeURIComponent(m[2]);
    $('#key').value = key;
    st.page = 'key';
    $('#page-overview').hidden = true;
    $('#page-key').hidden = false;
    loadKey(key);
  } else {
    st.page = 'overview';
    $('#page-overview').hidden = false;
    $('#page-key').hidden = true;
    pollOverview();
  }
}
function setJob(j) {
  if (!j || j === st.job) return;
  st.job = j;
  $('#job').value = j;
  localStorage.setItem('joinery.job', j);
}

// ---- overview ----
async function pollOverview() {
  clearTimeout(st.timer);
  try {
    await refreshOverview();
  } finally {
    if (st.page === 'overview') st.timer = setTimeout(pollOverview, POLL_MS);
  }
}

async function refreshOverview() {
  let samplesErr = '';
  const samples = await api('api/samples').catch((e) => { samplesErr = 'samples: ' + e.message; return null; });
  if (samples) {
    st.samples = samples;
    fill($('#jobs'), samples.jobs.map((j) => el('option', { value: j })));
    if (!st.job && samples.jobs.length) setJob(samples.jobs[0]);
    else if (st.job && samples.jobs.length && !samples.jobs.includes(st.job) && !$('#job').matches(':focus')) setJob(samples.jobs[0]);
  }
  const job = st.job;
  const [members, health, ready, wm, hot] = await Promise.allSettled([
    api('../v1/members'),
    api('../healthz', true),
    api('../readyz', true),
    job ? api(jobPath(job) + '/watermarks') : Promise.reject(new Error('no job yet')),
    job ? api(jobPath(job) + '/hot?n=10') : Promise.reject(new Error('no job yet')),
  ]);
  const errs = samplesErr ? [samplesErr] : [];
  if (members.status === 'rejected') errs.push('members: ' + members.reason.message);
  if (wm.status === 'rejected' && wm.reason.status !== 501 && job) errs.push('watermarks: ' + wm.reason.message);
  if (hot.status === 'rejected' && hot.reason.status !== 501 && job) errs.push('hot keys: ' + hot.reason.message);
  showError(errs.join(' · '));
  renderHealth(health.value, ready.value);
  renderFleet(members.status === 'fulfilled' ? members.value : null, wm.status === 'fulfilled' ? wm.value : null);
  renderCharts();
  renderWatermarks(wm);
  renderHot(hot);
}

function renderHealth(h, r) {
  const kids = [];
  if (h) kids.push(pill(h.status === 200 ? 'live' : 'restart needed', h.status === 200 ? 'ok' : 'bad'));
  if (r) kids.push(pill(r.status === 200 ? 'ready' : 'not ready', r.status === 200 ? 'ok' : 'warn'));
  const e = $('#health');
  fill(e, kids);
  e.title = [h && h.text, r && r.text].filter(Boolean).join('\n');
}

function renderFleet(members, wm) {
  const tbody = $('#members tbody');
  if (!members) return;
  // Sources named ~... are the node's own (the timer tick), not the job's.
  const srcs = (st.samples ? st.samples.sources : []).filter((s) => (!st.job || s.job === st.job) && !s.source.startsWith('~'));
  const parts = wm ? wm.partitions : [];
  const alive = members.filter((m) => m.status === 'alive').length;
  $('#fleet-sub').textContent = alive + ' of ' + members.length + ' members alive, as this node sees them';
  members.sort((a, b) => (b.self - a.self) || a.name.localeCompare(b.name));
  fill(tbody, members.map((m) => {
    const known = m.self;
    return el('tr', { class: m.self ? 'self' : '' },
      el('td', {}, el('b', {}, m.name), m.self ? el('span', { class: 'tag' }, 'this node') : null),
      el('td', {}, pill(m.status, m.status === 'alive' ? 'ok' : m.status === 'dead' ? 'bad' : 'warn')),
      el('td', { class: 'num' }, m.keys_active >= 0 ? fmtNum(m.keys_active, 0) : '–'),
      el('td', {}, known ? (srcs.length ? srcs.map((s) => (s.lease
        ? el('span', { class: 'chip ' + (s.reading ? 'on' : 'off'), title: s.reading ? 'holds the lease: reads it now' : 'waits for the lease holder to stop' }, s.source + (s.reading ? ' ✓ lease' : ' (waiting for lease)'))
        : el('span', { class: 'chip', title: 'read by every node it runs on' }, s.source))) : 'none') : '–'),
      el('td', {}, known ? (parts.length ? parts.map((p) => el('span', { class: 'chip' }, p.partition)) : 'none with watermarks') : '–'),
      el('td', { class: 'num' }, m.uptime_ns > 0 ? fmtDuration(m.uptime_ns) : '–'),
      el('td', {}, el('code', {}, m.address)),
      el('td', {}, el('code', {}, m.gossip_addr)),
      el('td', { class: 'dim' }, el('code', {}, m.id)));
  }));
}

// Each chart: a title, and the series (label, pick(sample) -> number|null).
function chartDefs(job) {
  const j = (f) => (s) => (s.jobs[job] ? f(s.jobs[job]) : null);
  return [
    { title: 'records in /s', series: [['in', j((x) => x.in_per_sec)]] },
    { title: 'outputs /s', series: [['out', j((x) => x.out_per_sec)]] },
    { title: 'rejected + late /s', series: [['rejected', j((x) => x.rejected_per_sec)], ['late', j((x) => x.late_per_sec)]] },
    { title: 'snapshot write latency ms', series: [['p50', (s) => s.snapshot_p50_ms], ['p99', (s) => s.snapshot_p99_ms]] },
    { title: 'snapshot writes /s', series: [['writes', (s) => s.snapshot_writes_per_sec]] },
    { title: 'keys active', series: [['keys', j((x) => x.keys_active)]] },
    { title: 'fenced writes + Redis errors /s', series: [['fenced', j((x) => x.fenced_per_sec)], ['redis', (s) => s.redis_errors_per_sec]] },
    { title: 'watermark lag behind wall clock s', series: [['max', j((x) => x.watermark_lag_sec)]] },
  ];
}

function renderCharts() {
  const s = st.samples;
  const box = $('#charts');
  if (!s) return;
  const n = s.samples.length;
  $('#throughput-sub').textContent = n
    ? 'last ' + fmtDuration(n * s.interval_ms * 1e6) + ', a sample every ' + fmtMs(s.interval_ms) + (st.job ? ', job ' + st.job : '')
    : 'collecting samples…';
  fill(box, chartDefs(st.job).map((c) => sparkChart(c, s.samples, s.interval_ms)));
}

function sparkChart(def, samples, interval) {
  const W = 260, H = 64, P = 3;
  const fmt = def.fmt || ((v) => fmtNum(v));
  const vals = def.series.map(([, pick]) => samples.map(pick));
  let max = 0;
  for (const vs of vals) for (const v of vs) if (v !== null && v !== undefined && v > max) max = v;
  const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: 'spark', role: 'img' });
  g.append(svg('line', { x1: 0, y1: H - P, x2: W, y2: H - P, class: 'axis' }));
  const span = Math.max(1, (samples.length - 1));
  const x = (i) => (samples.length < 2 ? W : (i / span) * W);
  const y = (v) => H - P - (max > 0 ? (v / max) * (H - 2 * P) : 0);
  const legend = [];
  vals.forEach((vs, k) => {
    let pts = '';
    vs.forEach((v, i) => { if (v !== null && v !== undefined) pts += `${x(i).toFixed(1)},${y(v).toFixed(1)} `; });
    if (pts) g.append(svg('polyline', { points: pts.trim(), class: 'line s' + k }));
    let last = null;
    for (let i = vs.length - 1; i >= 0; i--) if (vs[i] !== null && vs[i] !== undefined) { last = vs[i]; break; }
    legend.push(el('span', { class: 'lg s' + k }, def.series[k][0] + ' ', el('b', {}, last === null ? '–' : fmt(last))));
  });
  return el('figure', { class: 'chart' },
    el('figcaption', {}, def.title, el('span', { class: 'max' }, 'max ' + fmt(max))),
    g, el('div', { class: 'legend' }, legend));
}

// holder is the partition holding the combined watermark back: the slowest
// one that is not idle (what the node's why answer calls held_by).
function holder(parts) {
  let h = null;
  for (const p of parts) {
    if (p.idle || p.watermark <= MIN_I64) continue;
    if (!h || p.watermark < h.watermark) h = p;
  }
  return h;
}

function renderWatermarks(res) {
  const tbody = $('#wm-table tbody');
  const note = $('#wm-note');
  if (res.status === 'rejected') {
    fill(tbody);
    note.textContent = res.reason.status === 501 ? 'This node does not track watermarks.' : '';
    return;
  }
  const w = res.value;
  $('#wm-sub').textContent = 'combined watermark ' + fmtTs(w.global);
  if (!w.partitions.length) {
    fill(tbody);
    note.textContent = 'No event-time partitions: a changelog (cdc) join emits every change at once and has no watermarks.';
    return;
  }
  const h = holder(w.partitions);
  note.textContent = h ? 'The marked partition is the slowest active one: it holds the job\'s watermark back.' : 'All partitions are idle or have seen no event.';
  fill(tbody, w.partitions.map((p) => {
    const held = h && p.partition === h.partition;
    return el('tr', { class: held ? 'holding' : '' },
      el('td', {}, p.source),
      el('td', {}, el('code', {}, p.partition)),
      el('td', {}, fmtTs(p.watermark)),
      el('td', {}, fmtTs(p.max_ts)),
      el('td', { class: 'num' }, fmtMs(p.lag_ms)),
      el('td', {}, p.idle ? pill('idle', 'off') : held ? pill('holds the job back', 'warn') : pill('active', 'ok')));
  }));
}

function renderHot(res) {
  const tbody = $('#hot-table tbody');
  const note = $('#hot-note');
  if (res.status === 'rejected') { fill(tbody); note.textContent = ''; return; }
  note.textContent = res.value.length ? '' : 'No events in the last complete window.';
  fill(tbody, res.value.map((k) => el('tr', {},
    el('td', {}, el('a', { href: keyHash(st.job, k.key) }, k.key)),
    el('td', { class: 'num' }, fmtNum(k.events_per_sec)))));
}

const keyHash = (job, key) => '#/jobs/' + encodeURIComponent(job) + '/keys/' + encodeURIComponent(key);

// ---- key page ----
async function loadKey(key) {
  const job = st.job;
  $('#key-name').textContent = key;
  $('#key-job').textContent = job ? 'job ' + job : 'no job chosen';
  showError('');
  const base = jobPath(job) + '/keys/' + encodeURIComponent(key);
  const [loc, ks, why] = await Promise.allSettled([api(base + '/location'), api(base), api(base + '/why')]);
  const kerr = $('#key-error');
  const errs = [];
  if (loc.status === 'rejected') errs.push('location: ' + loc.reason.message);
  if (ks.status === 'rejected') errs.push('state: ' + ks.reason.message);
  kerr.hidden = !errs.length;
  kerr.textContent = errs.join(' · ');
  renderLocation(loc.value, ks.value);
  renderKeyState(ks.value);
  renderWhy(why);
}

function kv(dl, pairs) {
  fill(dl, pairs.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
}

function renderLocation(loc, ks) {
  const pairs = [];
  if (loc) {
    pairs.push(['owner', el('code', {}, loc.node)]);
    pairs.push(['actor', loc.active ? pill('active', 'ok') : pill('passivated (in the store)', 'off')]);
  }
  if (ks) {
    pairs.push(['answered by', el('code', {}, ks.node || 'the store')]);
    pairs.push(['fencing epoch', String(ks.epoch)]);
  }
  kv($('#key-location'), pairs);
}

// rowsTable renders JSON rows as a table with the union of their columns.
function rowsTable(rows, id) {
  if (!rows.length) return el('p', { class: 'dim', id }, 'none');
  const cols = [];
  for (const r of rows) for (const c of Object.keys(r)) if (!cols.includes(c)) cols.push(c);
  return el('table', { class: 'rows', id },
    el('thead', {}, el('tr', {}, cols.map((c) => el('th', {}, c)))),
    el('tbody', {}, rows.map((r) => el('tr', {}, cols.map((c) => el('td', {}, cell(r[c])))))));
}
function cell(v) {
  if (v === null) return el('span', { class: 'dim' }, 'null');
  if (v === undefined) return '';
  if (v instanceof Big) return v.s;
  return typeof v === 'object' ? prettyJSON(v).replace(/\s*\n\s*/g, ' ') : String(v);
}

function renderKeyState(ks) {
  const left = $('#key-left'), rights = $('#key-rights'), timed = $('#key-timed');
  if (!ks) {
    fill(left); fill(rights); fill(timed); fill($('#key-offsets')); fill($('#key-timers')); kv($('#key-progress'), []);
    $('#key-rights-count').textContent = '';
    return;
  }
  const l = ks.left && typeof ks.left === 'object' ? ks.left : null;
  // An event-time join keeps its buffers in state; left and right are the
  // changelog join's.
  $('#key-sides').hidden = !!ks.state && !l && !(ks.rights || []).length;
  fill(left, rowsTable(l ? [l] : [], 'key-left-rows'));
  const rs = (ks.rights || []).filter((r) => r && typeof r === 'object');
  fill(rights, rowsTable(rs, 'key-right-rows'));
  $('#key-rights-count').textContent = rs.length + (rs.length === 1 ? ' row' : ' rows');
  fill(timed, ks.state ? [el('h3', {}, 'Event-time join state'), el('pre', { class: 'json' }, prettyJSON(ks.state))] : []);
  const offs = Object.entries(ks.offsets || {}).sort();
  fill($('#key-offsets'), offs.length ? el('table', { class: 'rows', id: 'key-offsets-table' },
    el('thead', {}, el('tr', {}, el('th', {}, 'source partition'), el('th', {}, 'highest applied offset'))),
    el('tbody', {}, offs.map(([p, o]) => el('tr', {}, el('td', {}, el('code', {}, p)), el('td', { class: 'num' }, String(o)))))) : el('p', { class: 'dim' }, 'none'));
  const tm = ks.timers || [];
  fill($('#key-timers'), tm.length ? el('ul', { class: 'timers' }, tm.map((t) => el('li', {}, fmtTs(t)))) : el('p', { class: 'dim' }, 'no pending timers'));
  kv($('#key-progress'), [
    ['outbox', ks.outbox ? pill(ks.outbox + (ks.outbox === 1 ? ' input' : ' inputs') + ' kept for re-sending', 'warn') : pill('empty', 'ok')],
    ['key watermark', fmtTs(ks.watermark)],
    ['late events', String(ks.late)],
    ['dead-lettered', String(ks.dead_lettered)],
  ]);
}

function renderWhy(res) {
  const box = $('#why');
  if (res.status === 'rejected') {
    fill(box, el('p', { class: 'dim' }, res.reason.status === 501 ? 'This node cannot explain keys.' : res.reason.message));
    return;
  }
  const w = res.value;
  const kids = [];
  if (w.note) kids.push(el('p', { class: 'note', id: 'why-note' }, w.note));
  const pairs = [['job watermark', fmtTs(w.watermark)], ['key watermark', fmtTs(w.key_watermark)]];
  if (w.held_by) pairs.push(['held back by', el('span', {}, el('code', {}, w.held_by.partition), ' at ' + fmtTs(w.held_by.watermark) + (w.held_by.lag_ms ? ', ' + fmtMs(w.held_by.lag_ms) + ' behind' : ''))]);
  const dl = el('dl', { class: 'kv' });
  kv(dl, pairs);
  kids.push(dl);
  if (w.waits.length) {
    kids.push(el('table', { class: 'rows', id: 'why-waits' },
      el('thead', {}, el('tr', {}, el('th', {}, 'waits for'), el('th', {}, 'at watermark'), el('th', {}, 'behind'))),
      el('tbody', {}, w.waits.map((x) => el('tr', { class: x.behind_ms ? '' : 'due' },
        el('td', {}, x.what), el('td', {}, fmtTs(x.needs_watermark)), el('td', { class: 'num' }, x.behind_ms ? fmtMs(x.behind_ms) : 'due'))))));
  }
  fill(box, kids);
}

// ---- wiring ----
function init() {
  if (st.job) $('#job').value = st.job;
  $('#token').value = st.token;
  const setToken = (e) => {
    st.token = e.target.value.trim();
    if (st.token) sessionStorage.setItem('joinery.token', st.token);
    else sessionStorage.removeItem('joinery.token');
  };
  $('#token').addEventListener('input', setToken);
  $('#token').addEventListener('change', (e) => { setToken(e); route(); });
  $('#job').addEventListener('change', (e) => {
    const j = e.target.value.trim();
    if (j) { st.job = j; localStorage.setItem('joinery.job', j); route(); }
  });
  $('#keyform').addEventListener('submit', (e) => {
    e.preventDefault();
    const key = $('#key').value.trim();
    if (!key) return;
    setJob($('#job').value.trim());
    if (!st.job) { showError('Choose a job first (the job box).'); return; }
    const h = keyHash(st.job, key);
    if (location.hash === h) route(); else location.hash = h;
  });
  $('#key-refresh').addEventListener('click', () => route());
  window.addEventListener('hashchange', route);
  route();
}
init();
