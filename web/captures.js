// @ts-check
// captures.js: the list of the service's captures (GET /api/captures, asked again every two
// seconds by app.js), each with its event count, a live mark and a link to download its
// bundle; a click opens it by setting the URL's fragment (session.js says what it means).
// And drop to import: a file dropped on the page is posted to /api/captures/import under a
// name made from its file name, then opened.
import { api } from './session.js';

/**
 * A capture as /api/captures lists it (docs/serve.md); the list uses these fields.
 * @typedef {{ name: string, events?: number, live?: boolean, samples?: number }} Capture
 */
/**
 * The answer of POST /api/captures/import (docs/serve.md): the capture stored.
 * @typedef {{ name: string, events: number, new_objects: number, new_bytes: number }} Imported
 */

/**
 * @param {string} id
 * @returns {HTMLElement} the page's element of that id (index.html has each one the code names)
 */
function $(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el;
}

export class CaptureList {
  /** @param {HTMLElement} ul the list's element */
  constructor(ul) {
    this.ul = ul;
    /** @type {Capture[]} */
    this.captures = [];
    this.open = ''; // the name of the capture open, marked in the list
  }

  /**
   * @param {string} name
   * @returns {Capture | undefined} the capture listed under name
   */
  find(name) { return this.captures.find((x) => x.name === name); }

  /** @param {string} name the capture now open, marked as such */
  markOpen(name) {
    this.open = name;
    for (const li of this.ul.children) {
      const el = /** @type {HTMLElement} */ (li);
      el.classList.toggle('open', el.dataset.name === name);
    }
  }

  /** Asks the service for its captures and redraws the list (kept as it was on an error). */
  async refresh() {
    try {
      this.captures = /** @type {Capture[]} */ (await api('/api/captures'));
    } catch (e) {
      return;
    }
    const ul = this.ul;
    ul.textContent = '';
    for (const c of this.captures) {
      const li = document.createElement('li');
      li.dataset.name = c.name;
      const n = document.createElement('span'); n.className = 'name'; n.textContent = c.name;
      const ev = document.createElement('span'); ev.className = 'n'; ev.textContent = (c.events ?? 0).toLocaleString('en');
      li.append(n, ev);
      if (c.live) { const l = document.createElement('span'); l.className = 'live'; l.textContent = '● live'; li.append(l); }
      const a = document.createElement('a');
      a.href = `/api/captures/${encodeURIComponent(c.name)}/export?format=bundle`;
      a.textContent = '⤓';
      a.title = 'download its bundle';
      a.setAttribute('download', `${c.name}.bundle`);
      a.addEventListener('click', (e) => e.stopPropagation());
      li.append(a);
      li.addEventListener('click', () => { location.hash = `capture=${encodeURIComponent(c.name)}`; });
      ul.append(li);
    }
    this.markOpen(this.open);
  }
}

/**
 * The name an imported file is stored under: its name without the format's extensions, in
 * the characters a capture's name may hold.
 * @param {File} file
 */
function importName(file) {
  const n = file.name.replace(/\.(bundle|json|zip|parquet|wire|packed|gz|zst)$/gi, '').replace(/[^A-Za-z0-9._-]/g, '_').replace(/^[.-]+/, '');
  return (n || 'imported').slice(0, 128);
}

/**
 * Drop to import: a file dropped anywhere on the page is imported into the service, the
 * list refreshed and the new capture opened; onError says why an import failed.
 * @param {CaptureList} list
 * @param {(msg: string) => void} onError
 */
export function installDrop(list, onError) {
  window.addEventListener('dragover', (e) => { e.preventDefault(); $('drop').hidden = false; });
  window.addEventListener('dragleave', (e) => { if (!e.relatedTarget) $('drop').hidden = true; });
  window.addEventListener('drop', async (e) => {
    e.preventDefault();
    $('drop').hidden = true;
    const f = e.dataTransfer && e.dataTransfer.files[0];
    if (!f) return;
    const name = importName(f);
    $('title').textContent = `importing ${f.name} as ${name}…`;
    try {
      // The service takes a body only with a type no plain form can send (docs/serve.md).
      const r = /** @type {Imported} */ (await api(`/api/captures/import?name=${encodeURIComponent(name)}`, {
        method: 'POST', body: f, headers: { 'Content-Type': 'application/octet-stream' },
      }));
      await list.refresh();
      location.hash = `capture=${encodeURIComponent(r.name)}`;
    } catch (err) {
      onError(`import of ${f.name}: ${err instanceof Error ? err.message : err}`);
    }
  });
}
