/**
 * The console's only assets, served by the receiver itself: a style sheet, a script that shows
 * times in the reader's local time with the UTC value on hover (the pages work without it), and
 * an icon.
 */
export const CONSOLE_CSS = `
:root { color-scheme: light dark; --muted: #6b7280; --line: #d1d5db; --bad: #b91c1c; --good: #15803d; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, sans-serif; }
header { display: flex; flex-wrap: wrap; gap: 1rem; align-items: baseline; padding: 0.75rem 1rem; border-bottom: 1px solid var(--line); }
header .brand { font-weight: 600; text-decoration: none; }
header nav { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; }
header nav a { white-space: nowrap; }
header nav a[aria-current="page"] { font-weight: 600; text-decoration: none; border-bottom: 2px solid currentColor; }
main { padding: 1rem; max-width: 72rem; margin: 0 auto; }
h1 { font-size: 1.4rem; overflow-wrap: anywhere; }
h2 { font-size: 1.1rem; margin-top: 1.5rem; }
code { overflow-wrap: anywhere; }
.search { display: flex; flex-wrap: wrap; gap: 0.5rem; margin-bottom: 1rem; }
.search input { flex: 1 1 16rem; padding: 0.4rem; }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: 0.4rem; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: anywhere; }
.state, .run { display: inline-block; padding: 0 0.4rem; margin: 0 0.2rem 0.2rem 0; border: 1px solid var(--line); border-radius: 0.3rem; font-size: 0.85rem; }
.state-failed, .run-failed { color: var(--bad); border-color: var(--bad); }
.state-done, .run-completed { color: var(--good); }
.error { color: var(--bad); white-space: pre-wrap; overflow-wrap: anywhere; }
.empty, .meta { color: var(--muted); }
.fields { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 1rem; }
.fields dt { color: var(--muted); }
.fields dd { margin: 0; overflow-wrap: anywhere; }
.text { white-space: pre-wrap; }
.runs, .timeline { padding-left: 1.2rem; }
.timeline time { color: var(--muted); margin-right: 0.3rem; }
.pager { display: flex; gap: 1rem; margin-top: 1rem; }
.notice { padding: 0.5rem; border: 1px solid var(--good); border-radius: 0.3rem; }
.actions { display: flex; gap: 0.5rem; margin: 1rem 0; }
.runs form, .group form { display: inline; }
button, a.button { padding: 0.3rem 0.8rem; cursor: pointer; }
a.button { display: inline-block; border: 1px solid currentColor; border-radius: 0.3rem; text-decoration: none; }
button.danger { color: var(--bad); }
pre.body { padding: 0.75rem; border: 1px solid var(--line); white-space: pre-wrap; overflow-wrap: anywhere; max-height: 40rem; overflow: auto; }
.tiles { display: flex; flex-wrap: wrap; gap: 1rem; }
.tile { flex: 1 1 18rem; border: 1px solid var(--line); border-radius: 0.3rem; padding: 0 1rem 1rem; }
.chart { width: 100%; height: auto; max-height: 12rem; }
.chart rect { fill: #2563eb; }
.chart text { font-size: 10px; fill: currentColor; }
.chart.arrivals { width: 9rem; height: 1.5rem; border-bottom: 1px solid var(--line); }
.spans { display: flex; gap: 1rem; margin-bottom: 1rem; }
.spans a[aria-current="page"] { font-weight: 600; text-decoration: none; }
.matches .score { color: var(--muted); font-variant-numeric: tabular-nums; margin-left: 0.4rem; }
.similar form { margin-top: 0.5rem; }
.byte { color: var(--bad); border: 1px dotted var(--bad); padding: 0 0.1rem; }
@media (max-width: 40rem) {
  thead { display: none; }
  tr, td { display: block; }
  tr { border-bottom: 1px solid var(--line); padding: 0.4rem 0; }
  td { border: 0; padding: 0.1rem 0; }
  /* The header row is hidden here: each cell says what it is. */
  td[data-label]::before { content: attr(data-label); display: inline-block; min-width: 7.5rem; margin-right: 0.5rem; color: var(--muted); }
  td[data-label]:empty { display: none; }
  .fields { grid-template-columns: 1fr; }
}
`;

export const CONSOLE_JS = `
for (const element of document.querySelectorAll('time[datetime]')) {
  const date = new Date(element.getAttribute('datetime'));
  if (Number.isNaN(date.getTime())) continue;
  element.title = date.toISOString().replace('T', ' ').replace(/\\.\\d+Z$/, ' UTC');
  element.textContent = date.toLocaleString();
}
// The chart's minutes (overview.ts): "12:07 UTC" at the start of the text, in local time.
for (const element of document.querySelectorAll('[data-minute]')) {
  const date = new Date(element.getAttribute('data-minute'));
  if (Number.isNaN(date.getTime())) continue;
  const local = date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  element.textContent = element.textContent.trim().replace(/^\\d\\d:\\d\\d UTC/, local);
}
// A page of something under way (a bulk action's progress) shows it again after a while.
const reload = document.querySelector('[data-reload-after]');
if (reload) setTimeout(() => location.reload(), Number(reload.getAttribute('data-reload-after')) * 1000);
`;

/** An envelope: deliveries received. Also bull-board's icon (admin-dashboard.ts). */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="6" fill="#2563eb"/>
<path d="M6 10h20v13H6z" fill="none" stroke="#fff" stroke-width="2" stroke-linejoin="round"/>
<path d="M6 10l10 8 10-8" fill="none" stroke="#fff" stroke-width="2" stroke-linejoin="round"/>
</svg>
`;
