import type { Action } from 'svelte/action';

/**
 * For a box that scrolls its content (a wide table on a phone): while its content is larger than it, it takes the
 * keyboard's focus (tabindex 0), so someone without a mouse can scroll it with the arrow keys (WCAG 2.1.1; axe's
 * scrollable-region-focusable). While it fits, it is left out of the tab order.
 */
export const scrollable: Action<HTMLElement> = (box) => {
  const check = () => {
    const scrolls = box.scrollWidth > box.clientWidth || box.scrollHeight > box.clientHeight;
    if (scrolls) box.setAttribute('tabindex', '0');
    else box.removeAttribute('tabindex');
  };
  // The box and its content change size with the window and as rows come and go.
  const observer = new ResizeObserver(check);
  observer.observe(box);
  for (const child of box.children) observer.observe(child);
  check();
  return { destroy: () => observer.disconnect() };
};
