// How a run shares its concurrency cap among the pages it works on side by side. The cap is the run's: the
// lanes' shares add up to it exactly, and a run with fewer pages left uses fewer, larger lanes.
export function pageLanes(cap: number, pageWindow: number, pagesLeft: number): number[] {
  const lanes = Math.max(1, Math.min(pageWindow, pagesLeft, cap));
  return Array.from({ length: lanes }, (_, lane) => Math.floor(cap / lanes) + (lane < cap % lanes ? 1 : 0));
}
