// SPDX-License-Identifier: MIT
// element.js: <rcanvas-view>, the custom element around RCanvasView, for pages that prefer markup:
//
//   <script type="module" src="/client/element.js"></script>
//   <rcanvas-view canvas="left" token="T"></rcanvas-view>       (or src="http://host:port/c/left?token=T")
//
// Attributes (read when the element enters the document): src, canvas, token, autofocus, stats. The view is
// made when the element is connected to the document and destroyed when it is removed; `.view` is the
// RCanvasView. The element is display: block with a default height (rcanvas.css); size it with CSS.
import { RCanvasView } from './view.js';

export class RCanvasViewElement extends HTMLElement {
  connectedCallback() {
    if (this.view) return;
    const a = (n) => this.getAttribute(n);
    this.view = new RCanvasView(this, {
      url: a('src') || undefined,
      canvas: a('canvas') ?? '',
      token: a('token') ?? undefined,
      autofocus: this.hasAttribute('autofocus'),
      stats: this.hasAttribute('stats'),
    });
  }

  disconnectedCallback() {
    if (this.view) this.view.destroy();
    this.view = null;
  }
}

if (typeof customElements !== 'undefined' && !customElements.get('rcanvas-view')) {
  customElements.define('rcanvas-view', RCanvasViewElement);
}
