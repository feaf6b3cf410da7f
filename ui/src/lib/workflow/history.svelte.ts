// Undo and redo of the editor: snapshots of the edited agent as JSON. Typing into one field makes one step, not one
// per key: a change within a moment of the last one to the same place joins it.
export class History {
  #past: string[] = [];
  #future: string[] = [];
  #current: string;
  #lastAt = 0;
  #lastPlace = '';
  canUndo = $state(false);
  canRedo = $state(false);

  constructor(initial: string) {
    this.#current = initial;
  }

  /** Records the state after a change; `place` names what changed, so keystrokes in one field coalesce. */
  record(state: string, place = '') {
    if (state === this.#current) return;
    const now = Date.now();
    const joins = place !== '' && place === this.#lastPlace && now - this.#lastAt < 1500;
    if (!joins) this.#past.push(this.#current);
    this.#current = state;
    this.#future = [];
    this.#lastAt = now;
    this.#lastPlace = place;
    this.#sync();
  }

  undo(): string | null {
    const previous = this.#past.pop();
    if (previous === undefined) return null;
    this.#future.push(this.#current);
    this.#current = previous;
    this.#lastPlace = '';
    this.#sync();
    return previous;
  }

  redo(): string | null {
    const next = this.#future.pop();
    if (next === undefined) return null;
    this.#past.push(this.#current);
    this.#current = next;
    this.#lastPlace = '';
    this.#sync();
    return next;
  }

  #sync() {
    this.canUndo = this.#past.length > 0;
    this.canRedo = this.#future.length > 0;
  }
}
