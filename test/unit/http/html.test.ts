import { describe, expect, it } from 'vitest';
import { escapeHtml, html, isolated, isolatedText } from '../../../src/http/console/html.js';

describe('visitor text in a page', () => {
  it('is isolated in <bdi>, escaped inside it', () => {
    const cell = html`<td>${isolated('\u202E<b>grey')}</td>`;
    expect(cell.markup).toBe('<td><bdi>\u202E&lt;b&gt;grey</bdi></td>');
  });

  it('is closed by a pop directional isolate where no markup can go', () => {
    expect(isolatedText('\u202Egrey')).toBe('\u2068\u202Egrey\u2069');
  });

  it('shows a NUL as the replacement character, which a browser would drop from text', () => {
    expect(escapeHtml('a\u0000b')).toBe('a\uFFFDb');
  });
});
