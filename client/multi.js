// SPDX-License-Identifier: MIT
// multi.js: the script of client/multi.html: one RCanvasView per name in ?canvases=a,b,… (the page's ?token= is
// used by each). Click a view to give it the keyboard and the wheel (input.js).
import { validCanvasName } from './protocol.js';
import { RCanvasView } from './view.js';

const names = (new URLSearchParams(location.search).get('canvases') || '').split(',').filter(Boolean);
const main = document.getElementById('views');
for (const name of names) {
  const box = main.appendChild(document.createElement('section'));
  box.className = 'multi-box';
  box.appendChild(document.createElement('h2')).textContent = name;
  const holder = box.appendChild(document.createElement('div'));
  holder.className = 'multi-view';
  if (validCanvasName(name)) new RCanvasView(holder, { canvas: name, root: '../' }); // this page is ROOT/client/
  else holder.textContent = `not a canvas name: ${name}`;
}
