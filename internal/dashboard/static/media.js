// The files and images of tool results: an image block shown inline, a
// ref block (a file kept in the fleet's object store) shown inline when it
// is an image the page may show, and offered for download in any case,
// through GET /api/object?ref=…. Loaded before app.js, which calls
// mediaBlocks for each result it renders.
'use strict';

const INLINE_IMAGES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

function mediaBlocks(result) {
  const out = [];
  let shown = false; // the block before was an image by reference, shown
  for (const b of (result && Array.isArray(result.content)) ? result.content : []) {
    if (!b || typeof b !== 'object') continue;
    const mt = String(b.mime_type || '').split(';')[0].trim().toLowerCase();
    const after = shown;
    shown = b.type === 'ref' && INLINE_IMAGES.includes(mt);
    // The orchestrator puts the model's view of a small image by reference
    // right after it: the page shows the file once.
    if (b.type === 'image' && after) continue;
    if (b.type === 'image' && INLINE_IMAGES.includes(mt) && typeof b.data === 'string') {
      out.push(mediaEl('img', { className: 'result-image', alt: 'image result', src: 'data:' + mt + ';base64,' + b.data }));
    } else if (b.type === 'ref' && typeof b.$ref === 'string') {
      const url = 'api/object?ref=' + encodeURIComponent(b.$ref);
      const fig = mediaEl('div', { className: 'result-file' });
      if (INLINE_IMAGES.includes(mt)) fig.append(mediaEl('img', { className: 'result-image', alt: b.name || 'image result', src: url }));
      const label = (b.name || 'file') + ' (' + (mt || 'application/octet-stream') + ', ' + Number(b.size || 0) + ' bytes)';
      const a = mediaEl('a', { className: 'download', href: url, download: b.name || '' });
      a.textContent = 'download ' + label;
      fig.append(a);
      out.push(fig);
    }
  }
  return out;
}

function mediaEl(tag, attrs) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'className') e.className = v;
    else e.setAttribute(k, String(v));
  }
  return e;
}
